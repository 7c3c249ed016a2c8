// Declarations only: the ArkUI decorators, the custom-component base and the few built-in
// components the example page uses (the real ones are ets/component/*.d.ts in the SDK).
declare const Entry: ClassDecorator;
declare const Component: ClassDecorator;
declare const State: PropertyDecorator;
declare const Prop: PropertyDecorator;
declare const Link: PropertyDecorator;
declare const Builder: MethodDecorator;

declare class CustomComponent {
  build(): void;
  aboutToAppear?(): void;
  aboutToDisappear?(): void;
  onPageShow?(): void;
  onPageHide?(): void;
}

declare enum FontWeight { Normal, Medium, Bold }
declare enum HorizontalAlign { Start, Center, End }

interface ClickEvent {
  x: number;
  y: number;
}

declare class CommonMethod<T> {
  width(value: number | string): T;
  height(value: number | string): T;
  padding(value: number | string): T;
  margin(value: number | string): T;
  layoutWeight(value: number): T;
  enabled(value: boolean): T;
  onClick(event: (event: ClickEvent) => void): T;
}

interface ColumnOptions { space?: string | number; }
interface ColumnInterface { (value?: ColumnOptions): ColumnAttribute; }
declare class ColumnAttribute extends CommonMethod<ColumnAttribute> {
  alignItems(value: HorizontalAlign): ColumnAttribute;
}
declare const Column: ColumnInterface;
declare const ColumnInstance: ColumnAttribute;

interface RowOptions { space?: string | number; }
interface RowInterface { (value?: RowOptions): RowAttribute; }
declare class RowAttribute extends CommonMethod<RowAttribute> {}
declare const Row: RowInterface;
declare const RowInstance: RowAttribute;

interface TextInterface { (content?: string): TextAttribute; }
declare class TextAttribute extends CommonMethod<TextAttribute> {
  fontSize(value: number | string): TextAttribute;
  fontWeight(value: FontWeight): TextAttribute;
}
declare const Text: TextInterface;
declare const TextInstance: TextAttribute;

interface ButtonInterface { (label: string): ButtonAttribute; }
declare class ButtonAttribute extends CommonMethod<ButtonAttribute> {}
declare const Button: ButtonInterface;
declare const ButtonInstance: ButtonAttribute;

interface TextAreaOptions { placeholder?: string; text?: string; }
interface TextAreaInterface { (value?: TextAreaOptions): TextAreaAttribute; }
declare class TextAreaAttribute extends CommonMethod<TextAreaAttribute> {
  onChange(callback: (value: string) => void): TextAreaAttribute;
}
declare const TextArea: TextAreaInterface;
declare const TextAreaInstance: TextAreaAttribute;

interface TextInputOptions { placeholder?: string; text?: string; }
interface TextInputInterface { (value?: TextInputOptions): TextInputAttribute; }
declare class TextInputAttribute extends CommonMethod<TextInputAttribute> {
  onChange(callback: (value: string) => void): TextInputAttribute;
}
declare const TextInput: TextInputInterface;
declare const TextInputInstance: TextInputAttribute;

interface DividerInterface { (): DividerAttribute; }
declare class DividerAttribute extends CommonMethod<DividerAttribute> {}
declare const Divider: DividerInterface;
declare const DividerInstance: DividerAttribute;

interface BlankInterface { (min?: number | string): BlankAttribute; }
declare class BlankAttribute extends CommonMethod<BlankAttribute> {}
declare const Blank: BlankInterface;
declare const BlankInstance: BlankAttribute;

interface ScrollInterface { (): ScrollAttribute; }
declare class ScrollAttribute extends CommonMethod<ScrollAttribute> {}
declare const Scroll: ScrollInterface;
declare const ScrollInstance: ScrollAttribute;
