#include "hmllm/cpu_topology.h"

#include <algorithm>
#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <optional>

#include <pthread.h>
#include <sched.h>
#include <sys/resource.h>
#include <sys/syscall.h>
#include <unistd.h>

namespace hmllm {
namespace {

// sysfs values are one short line; anything longer is not a file we understand.
std::optional<std::string> read_small_file(const std::string& path) {
    FILE* f = std::fopen(path.c_str(), "r");
    if (f == nullptr) return std::nullopt;
    char buf[4096];
    size_t n = std::fread(buf, 1, sizeof buf, f);
    bool too_long = n == sizeof buf;
    std::fclose(f);
    if (too_long) return std::nullopt;
    std::string s(buf, n);
    while (!s.empty() && (s.back() == '\n' || s.back() == ' ' || s.back() == '\t' || s.back() == '\r')) s.pop_back();
    return s;
}

// A whole string of decimal digits; nullopt for anything else (garbage, sign, empty, overflow).
std::optional<long> parse_decimal(const std::string& s, size_t* pos = nullptr) {
    size_t i = pos ? *pos : 0;
    size_t start = i;
    long v = 0;
    while (i < s.size() && s[i] >= '0' && s[i] <= '9') {
        if (v > 100000000000L) return std::nullopt;
        v = v * 10 + (s[i] - '0');
        ++i;
    }
    if (i == start) return std::nullopt;
    if (pos) {
        *pos = i;
    } else if (i != s.size()) {
        return std::nullopt;
    }
    return v;
}

// The kernel's cpulist format: "0-3,5,7-9". Empty on anything malformed.
std::vector<int> parse_cpu_list(const std::string& s) {
    constexpr long kMaxCpu = 4095;
    std::vector<int> cpus;
    size_t pos = 0;
    while (pos < s.size()) {
        std::optional<long> a = parse_decimal(s, &pos);
        if (!a || *a > kMaxCpu) return {};
        long b = *a;
        if (pos < s.size() && s[pos] == '-') {
            ++pos;
            std::optional<long> e = parse_decimal(s, &pos);
            if (!e || *e < *a || *e > kMaxCpu) return {};
            b = *e;
        }
        for (long c = *a; c <= b; ++c) cpus.push_back(static_cast<int>(c));
        if (pos < s.size()) {
            if (s[pos] != ',') return {};
            ++pos;
        }
    }
    std::sort(cpus.begin(), cpus.end());
    cpus.erase(std::unique(cpus.begin(), cpus.end()), cpus.end());
    return cpus;
}

// One positive value per core from cpuN/<file>, or empty when any core lacks a well-formed one.
std::vector<long> read_per_core(const std::string& cpu_dir, const std::vector<int>& cpus, const char* file) {
    std::vector<long> values;
    for (int c : cpus) {
        std::optional<std::string> text = read_small_file(cpu_dir + "/cpu" + std::to_string(c) + "/" + file);
        std::optional<long> v = text ? parse_decimal(*text) : std::nullopt;
        if (!v || *v <= 0) return {};
        values.push_back(*v);
    }
    return values;
}

// The rule documented in cpu_topology.h.
constexpr double kSameTier = 0.95;  // values this close to the slowest core are the little tier
constexpr double kTooSlow = 0.5;    // a middle tier under half the fastest would be the straggler

std::vector<int> pick_big(const std::vector<int>& cpus, const std::vector<long>& values) {
    const long lo = *std::min_element(values.begin(), values.end());
    const long hi = *std::max_element(values.begin(), values.end());
    if (static_cast<double>(lo) >= kSameTier * static_cast<double>(hi)) return cpus;
    std::vector<int> big;
    for (size_t i = 0; i < cpus.size(); ++i) {
        const double v = static_cast<double>(values[i]);
        bool little = v * kSameTier <= static_cast<double>(lo) || v < kTooSlow * static_cast<double>(hi);
        if (!little) big.push_back(cpus[i]);
    }
    return big;
}

std::string format_cpu_list(std::vector<int> cpus) {
    std::sort(cpus.begin(), cpus.end());
    std::string out;
    for (size_t i = 0; i < cpus.size();) {
        size_t j = i;
        while (j + 1 < cpus.size() && cpus[j + 1] == cpus[j] + 1) ++j;
        if (!out.empty()) out += ",";
        out += std::to_string(cpus[i]);
        if (j > i) out += "-" + std::to_string(cpus[j]);
        i = j + 1;
    }
    return "cpu" + out;
}

long thread_id() { return static_cast<long>(syscall(SYS_gettid)); }  // gettid() needs glibc >= 2.30

}  // namespace

CpuTopology read_cpu_topology(const std::string& sysfs_root) {
    CpuTopology t;
    const std::string cpu_dir = sysfs_root + "/devices/system/cpu";
    std::optional<std::string> online = read_small_file(cpu_dir + "/online");
    if (!online) return t;
    t.all_cores = parse_cpu_list(*online);
    if (t.all_cores.empty()) return t;

    std::vector<long> capacity = read_per_core(cpu_dir, t.all_cores, "cpu_capacity");
    std::vector<long> freq = read_per_core(cpu_dir, t.all_cores, "cpufreq/cpuinfo_max_freq");
    const std::vector<long>& rank = !capacity.empty() ? capacity : freq;
    if (rank.empty()) return t;
    t.from_sysfs = true;
    t.big_cores = pick_big(t.all_cores, rank);

    // Clusters by identical (capacity, frequency), fastest first.
    for (size_t i = 0; i < t.all_cores.size(); ++i) {
        int cap = capacity.empty() ? 0 : static_cast<int>(capacity[i]);
        long khz = freq.empty() ? 0 : freq[i];
        auto it = std::find_if(t.clusters.begin(), t.clusters.end(),
                               [&](const CpuCluster& c) { return c.capacity == cap && c.max_freq_khz == khz; });
        if (it == t.clusters.end()) {
            t.clusters.push_back(CpuCluster{{}, cap, khz});
            it = t.clusters.end() - 1;
        }
        it->cpus.push_back(t.all_cores[i]);
    }
    std::stable_sort(t.clusters.begin(), t.clusters.end(), [](const CpuCluster& a, const CpuCluster& b) {
        if (a.capacity != b.capacity) return a.capacity > b.capacity;
        return a.max_freq_khz > b.max_freq_khz;
    });
    return t;
}

std::string CpuTopology::describe() const {
    if (all_cores.empty()) return "cores unknown (no readable online list); big: unknown";
    std::string out = std::to_string(all_cores.size()) + " cores: ";
    if (!from_sysfs) return out + format_cpu_list(all_cores) + ", no capacity or frequency; big: unknown";
    for (size_t i = 0; i < clusters.size(); ++i) {
        const CpuCluster& c = clusters[i];
        if (i > 0) out += " + ";
        out += std::to_string(c.cpus.size()) + "x " + format_cpu_list(c.cpus) + " (";
        if (c.max_freq_khz > 0) {
            long tenths = (c.max_freq_khz + 50000) / 100000;  // kHz -> GHz, one decimal
            out += std::to_string(tenths / 10) + "." + std::to_string(tenths % 10) + " GHz";
            if (c.capacity > 0) out += ", ";
        }
        if (c.capacity > 0) out += "capacity " + std::to_string(c.capacity);
        out += ")";
    }
    return out + "; big: " + std::to_string(big_cores.size());
}

int default_thread_count(const CpuTopology& topology) {
    int n = topology.big_cores.empty() ? 4 : static_cast<int>(topology.big_cores.size());
    if (!topology.all_cores.empty()) n = std::min(n, static_cast<int>(topology.all_cores.size()));
    return n;
}

ThreadPlacement place_inference_thread(const std::vector<int>& cores, bool raise_priority) {
    ThreadPlacement p;
    if (cores.empty()) {
        p.how = "not pinned (no cores given)";
    } else {
        cpu_set_t set;
        CPU_ZERO(&set);
        std::vector<int> usable;
        for (int c : cores) {
            if (c >= 0 && c < CPU_SETSIZE) {
                CPU_SET(c, &set);
                usable.push_back(c);
            }
        }
        // pid 0 is the calling thread, not the whole process, on Linux and OHOS.
        if (!usable.empty() && sched_setaffinity(0, sizeof set, &set) == 0) {
            p.pinned = true;
            p.how = "pinned to " + format_cpu_list(usable);
        } else {
            p.how = std::string("not pinned (sched_setaffinity: ") +
                    (usable.empty() ? "no valid cpu id" : std::strerror(errno)) + ")";
        }
    }
    if (!raise_priority) return p;

    // A thread-level nice only, never a real-time policy: SCHED_RR/FIFO inference threads pinned
    // to the big cores would outrank the app's UI render thread for the whole generation.
    // On Linux and OHOS setpriority(PRIO_PROCESS, tid) affects that thread only.
    const long tid = thread_id();
    errno = 0;
    const int current = getpriority(PRIO_PROCESS, static_cast<id_t>(tid));
    if (errno != 0) {
        p.how += std::string("; getpriority failed (") + std::strerror(errno) + ")";
        return p;
    }
    int last_errno = 0;
    for (int nice = kInferenceNice; nice < 0; ++nice) {
        if (current <= nice) {
            p.priority_raised = true;
            p.how += "; already nice " + std::to_string(current);
            return p;
        }
        if (setpriority(PRIO_PROCESS, static_cast<id_t>(tid), nice) == 0) {
            p.priority_raised = true;
            p.how += "; nice " + std::to_string(nice);
            return p;
        }
        last_errno = errno;
    }
    p.how += std::string("; nice refused (") + std::strerror(last_errno) + ")";
    return p;
}

}  // namespace hmllm
