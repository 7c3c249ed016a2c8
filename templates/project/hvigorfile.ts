// DevEco Studio builds this folder as a HAR module.
import { harTasks } from '@ohos/hvigor-ohos-plugin';

export default {
  system: harTasks,
  plugins: []
}
