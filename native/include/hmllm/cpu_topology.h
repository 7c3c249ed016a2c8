// Which cores are the fast ones, read from sysfs, and putting an inference thread on them with a
// raised priority (threads = number of big cores, 4 when unknown).
#pragma once

#include <string>
#include <vector>

namespace hmllm {

// Online cores that report the same capacity and maximum frequency (0 = not reported).
struct CpuCluster {
    std::vector<int> cpus;
    int capacity = 0;
    long max_freq_khz = 0;
};

struct CpuTopology {
    std::vector<int> big_cores;       // logical CPU ids of the fastest cluster(s) (e.g. prime + performance cores)
    std::vector<int> all_cores;       // online CPUs; empty when the online list was unreadable
    std::vector<CpuCluster> clusters; // fastest first, for describe() and logs
    bool from_sysfs = false;          // false: no usable capacity or frequency, big_cores is empty
    std::string describe() const;     // "8 cores: 1x cpu7 (3.1 GHz, capacity 1024) + 3x cpu4-6 (...) + ...; big: 4"
};

// Reads <root>/devices/system/cpu/{online, cpuN/cpu_capacity, cpuN/cpufreq/cpuinfo_max_freq}.
// A source is used only when every online core has a well-formed positive value in it, so a
// garbage or missing file makes it fall back to the next source instead of guessing.
//
// Big-core rule, applied to cpu_capacity when present, else to cpuinfo_max_freq:
//   a core is little when its value is within 5% of the slowest core's (value <= min / 0.95) or
//   below half the fastest core's; every other core is big. When that makes every core little,
//   the values are uniform within 5% and every core is big.
// So 1+3+4 (1024/880/450) gives prime + performance = 4, 2+6 gives 2, 4+4 gives 4, a uniform
// machine (or per-core turbo bins a few % apart) gives all cores, and Intel P+E gives the P cores.
// Why not "value >= some fraction of the maximum": frequencies hide the IPC gap, e.g. an A76/A55
// 2+6 at 2.27/1.88 GHz is 83% (2.2/2.0 GHz parts reach 91%), above any fraction that still keeps
// the performance cores of a 1+3+4; the slowest tier is the in-order little cluster either way.
CpuTopology read_cpu_topology(const std::string& sysfs_root = "/sys");

// The default inference thread count: the number of big cores, 4 when unknown, never
// more than the online cores when those are known.
int default_thread_count(const CpuTopology& topology);

struct ThreadPlacement {
    bool pinned = false;
    bool priority_raised = false;
    std::string how;  // what was tried and what took, for logs
};

// Applies to the calling thread: pins it to `cores` (sched_setaffinity; false when refused or
// `cores` is empty) and, if asked, raises its priority with a thread-level nice (setpriority on
// the tid, trying kInferenceNice first and then smaller steps that RLIMIT_NICE may allow) — not a
// real-time policy, which would outrank the UI thread. Never lowers a priority that is already
// higher. Reports only what took.
constexpr int kInferenceNice = -10;
ThreadPlacement place_inference_thread(const std::vector<int>& cores, bool raise_priority);

}  // namespace hmllm
