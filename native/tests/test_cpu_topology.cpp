// Big-core detection over recorded sysfs trees (tests/data/sysfs/<layout>, each with a README of
// what it models), and thread placement on the live machine.
#include "hmllm/cpu_topology.h"

#include <algorithm>
#include <cerrno>
#include <string>
#include <thread>
#include <vector>

#include <pthread.h>
#include <sched.h>
#include <sys/resource.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "test_main.h"

namespace {

std::string data_dir() {
#ifdef HMLLM_TEST_DATA_DIR
    return HMLLM_TEST_DATA_DIR;
#else
    std::string f = __FILE__;
    return f.substr(0, f.find_last_of('/')) + "/data";
#endif
}

hmllm::CpuTopology tree(const char* name) { return hmllm::read_cpu_topology(data_dir() + "/sysfs/" + name); }

std::vector<int> range(int first, int last) {
    std::vector<int> v;
    for (int c = first; c <= last; ++c) v.push_back(c);
    return v;
}

std::string join(const std::vector<int>& v) {
    std::string s;
    for (int c : v) s += (s.empty() ? "" : ",") + std::to_string(c);
    return s;
}

// Runs fn on a fresh thread so the placement never sticks to the test's main thread.
template <typename Fn>
void on_new_thread(Fn fn) {
    std::thread t(fn);
    t.join();
}

}  // namespace

TEST_CASE(prime_plus_performance_cores_of_a_1_3_4_phone_are_big) {
    hmllm::CpuTopology t = tree("phone_1p3m4l");
    CHECK(t.from_sysfs);
    CHECK_EQ(join(t.all_cores), join(range(0, 7)));
    CHECK_EQ(join(t.big_cores), join(range(4, 7)));
    CHECK_EQ(hmllm::default_thread_count(t), 4);
    CHECK_EQ(t.describe(), std::string("8 cores: 1x cpu7 (3.1 GHz, capacity 1024) + 3x cpu4-6 (2.5 GHz, capacity 880) + "
                                       "4x cpu0-3 (2.1 GHz, capacity 450); big: 4"));
}

TEST_CASE(max_frequency_decides_when_there_is_no_capacity) {
    hmllm::CpuTopology t = tree("phone_2p6l_freq_only");
    CHECK(t.from_sysfs);
    CHECK_EQ(join(t.big_cores), join(range(6, 7)));
    CHECK_EQ(hmllm::default_thread_count(t), 2);
    CHECK_EQ(t.describe(), std::string("8 cores: 2x cpu6-7 (2.3 GHz) + 6x cpu0-5 (1.9 GHz); big: 2"));
}

TEST_CASE(four_plus_four_gives_the_four_big_cores) {
    hmllm::CpuTopology t = tree("phone_4p4l");
    CHECK_EQ(join(t.big_cores), join(range(4, 7)));
    CHECK_EQ(hmllm::default_thread_count(t), 4);
}

TEST_CASE(a_uniform_machine_has_every_core_big) {
    hmllm::CpuTopology t = tree("x86_uniform_8");
    CHECK(t.from_sysfs);
    CHECK_EQ(join(t.big_cores), join(range(0, 7)));
    CHECK_EQ(hmllm::default_thread_count(t), 8);
    CHECK_EQ(t.describe(), std::string("8 cores: 8x cpu0-7 (3.6 GHz); big: 8"));
}

TEST_CASE(nothing_readable_falls_back_to_four_threads) {
    for (const char* name : {"empty", "does_not_exist", "malformed_online"}) {
        hmllm::CpuTopology t = tree(name);
        CHECK(!t.from_sysfs);
        CHECK(t.big_cores.empty());
        CHECK(t.all_cores.empty());
        CHECK_EQ(hmllm::default_thread_count(t), 4);
    }
}

TEST_CASE(only_online_cores_count) {
    hmllm::CpuTopology t = tree("offline_0-5");
    CHECK_EQ(join(t.all_cores), join(range(0, 5)));
    CHECK_EQ(join(t.big_cores), join(range(4, 5)));
    CHECK_EQ(hmllm::default_thread_count(t), 2);
}

TEST_CASE(garbage_capacity_is_ignored_and_frequency_used) {
    hmllm::CpuTopology t = tree("malformed_capacity");
    CHECK(t.from_sysfs);
    CHECK_EQ(join(t.big_cores), join(range(6, 7)));
    CHECK_EQ(hmllm::default_thread_count(t), 2);
    CHECK(t.describe().find("capacity") == std::string::npos);
}

TEST_CASE(no_usable_source_keeps_online_cores_and_caps_the_fallback) {
    hmllm::CpuTopology t = tree("malformed_everything");
    CHECK(!t.from_sysfs);
    CHECK(t.big_cores.empty());
    CHECK_EQ(join(t.all_cores), join(range(0, 3)));
    CHECK_EQ(hmllm::default_thread_count(t), 4);
    CHECK_EQ(t.describe(), std::string("4 cores: cpu0-3, no capacity or frequency; big: unknown"));
}

TEST_CASE(live_machine_topology_is_sane) {
    hmllm::CpuTopology t = hmllm::read_cpu_topology();
    std::printf("# live: %s; default threads %d\n", t.describe().c_str(), hmllm::default_thread_count(t));
    for (int c : t.big_cores) CHECK(std::find(t.all_cores.begin(), t.all_cores.end(), c) != t.all_cores.end());
    int n = hmllm::default_thread_count(t);
    CHECK(n >= 1);
    if (!t.all_cores.empty()) CHECK(n <= static_cast<int>(t.all_cores.size()));
}

TEST_CASE(nothing_asked_nothing_claimed) {
    on_new_thread([] {
        hmllm::ThreadPlacement p = hmllm::place_inference_thread({}, false);
        CHECK(!p.pinned);
        CHECK(!p.priority_raised);
        p = hmllm::place_inference_thread({-1, 100000}, false);
        CHECK(!p.pinned);
    });
}

TEST_CASE(placement_reports_what_took) {
    hmllm::CpuTopology t = hmllm::read_cpu_topology();
    cpu_set_t allowed;
    CHECK_EQ(sched_getaffinity(0, sizeof allowed, &allowed), 0);
    std::vector<int> cores;
    for (int c = 0; c < CPU_SETSIZE; ++c) {
        if (CPU_ISSET(c, &allowed)) cores.push_back(c);
    }
    if (!t.big_cores.empty()) cores = t.big_cores;
    on_new_thread([&] {
        hmllm::ThreadPlacement p = hmllm::place_inference_thread(cores, true);
        std::printf("# placement: %s\n", p.how.c_str());
        CHECK(!p.how.empty());
        if (p.pinned) {
            cpu_set_t now;
            CHECK_EQ(sched_getaffinity(0, sizeof now, &now), 0);
            for (int c = 0; c < CPU_SETSIZE; ++c) {
                if (CPU_ISSET(c, &now)) CHECK(std::find(cores.begin(), cores.end(), c) != cores.end());
            }
        }
        if (p.priority_raised) {
            int policy = 0;
            sched_param param{};
            CHECK_EQ(pthread_getschedparam(pthread_self(), &policy, &param), 0);
            errno = 0;
            int nice = getpriority(PRIO_PROCESS, static_cast<id_t>(syscall(SYS_gettid)));
            CHECK_EQ(errno, 0);
            CHECK_EQ(policy, SCHED_OTHER);  // never real time: the UI thread must keep its share
            CHECK(nice < 0);
        }
        // Priority was raised on this thread only: the main thread keeps an ordinary policy.
    });
    int policy = 0;
    sched_param param{};
    CHECK_EQ(pthread_getschedparam(pthread_self(), &policy, &param), 0);
    CHECK_EQ(policy, SCHED_OTHER);
}

TEST_CASE(nice_fallback_is_thread_level) {
    // The nice fallback relies on setpriority(PRIO_PROCESS, tid) touching that thread only (Linux
    // and OHOS semantics, not POSIX); check it by lowering a worker's priority, always permitted.
    errno = 0;
    const int main_nice = getpriority(PRIO_PROCESS, static_cast<id_t>(syscall(SYS_gettid)));
    on_new_thread([] {
        const id_t tid = static_cast<id_t>(syscall(SYS_gettid));
        errno = 0;
        int before = getpriority(PRIO_PROCESS, tid);
        // At nice 19 (the lowest priority, e.g. a CI job run under `nice -n 19`) there is no lower
        // step to take: setpriority would clamp to 19 and succeed, so the step down is not checked there.
        if (before < 19 && setpriority(PRIO_PROCESS, tid, before + 1) == 0) {
            CHECK_EQ(getpriority(PRIO_PROCESS, tid), before + 1);
        }
    });
    CHECK_EQ(getpriority(PRIO_PROCESS, static_cast<id_t>(syscall(SYS_gettid))), main_nice);
}
