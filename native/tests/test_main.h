// A minimal test harness: the device and CI images have no network, so no gtest. Include it
// from exactly one source file per test executable (it defines main()).
//
//   TEST_CASE(parses_header) { CHECK(x); CHECK_EQ(a, b); }
//
// A failed check ends its test case; main() prints "ok NAME" or "FAIL NAME: file:line expr"
// for every case and exits non-zero if any failed. An argument runs only the cases whose name
// contains it.
#pragma once

#include <cstdio>
#include <cstring>
#include <exception>
#include <sstream>
#include <string>
#include <type_traits>
#include <utility>
#include <vector>

namespace hmtest {

struct Failure {
    std::string where;  // "file:line expr"
};

using TestFn = void (*)();

struct TestCase {
    const char* name;
    TestFn fn;
};

inline std::vector<TestCase>& registry() {
    static std::vector<TestCase> cases;
    return cases;
}

struct Registrar {
    Registrar(const char* name, TestFn fn) { registry().push_back({name, fn}); }
};

template <typename T, typename = void>
struct is_streamable : std::false_type {};
template <typename T>
struct is_streamable<T, decltype(void(std::declval<std::ostream&>() << std::declval<const T&>()))>
    : std::true_type {};

template <typename T>
std::string describe(const T& value) {
    if constexpr (std::is_enum_v<T>) {
        return std::to_string(static_cast<long long>(value));
    } else if constexpr (std::is_same_v<T, unsigned char> || std::is_same_v<T, signed char>) {
        return std::to_string(static_cast<int>(value));
    } else if constexpr (is_streamable<T>::value) {
        std::ostringstream os;
        os << value;
        return os.str();
    } else {
        return "?";
    }
}

[[noreturn]] inline void fail(const char* file, int line, const std::string& what) {
    const char* base = std::strrchr(file, '/');
    throw Failure{std::string(base ? base + 1 : file) + ":" + std::to_string(line) + " " + what};
}

}  // namespace hmtest

#define CHECK(cond)                                                   \
    do {                                                              \
        if (!(cond)) ::hmtest::fail(__FILE__, __LINE__, #cond);       \
    } while (0)

#define CHECK_EQ(a, b)                                                                      \
    do {                                                                                    \
        const auto& hmtest_lhs = (a);                                                       \
        const auto& hmtest_rhs = (b);                                                       \
        if (!(hmtest_lhs == hmtest_rhs)) {                                                  \
            ::hmtest::fail(__FILE__, __LINE__,                                              \
                           std::string(#a " == " #b " (") + ::hmtest::describe(hmtest_lhs) + \
                               " vs " + ::hmtest::describe(hmtest_rhs) + ")");              \
        }                                                                                   \
    } while (0)

#define TEST_CASE(name)                                                  \
    static void name();                                                  \
    static ::hmtest::Registrar name##_registrar(#name, &name);           \
    static void name()

int main(int argc, char** argv) {
    const char* filter = argc > 1 ? argv[1] : nullptr;
    int passed = 0;
    int failed = 0;
    for (const hmtest::TestCase& tc : hmtest::registry()) {
        if (filter != nullptr && std::strstr(tc.name, filter) == nullptr) continue;
        std::string failure;
        try {
            tc.fn();
        } catch (const hmtest::Failure& f) {
            failure = f.where;
        } catch (const std::exception& e) {
            failure = std::string("uncaught exception: ") + e.what();
        } catch (...) {
            failure = "uncaught exception";
        }
        if (failure.empty()) {
            std::printf("ok %s\n", tc.name);
            ++passed;
        } else {
            std::printf("FAIL %s: %s\n", tc.name, failure.c_str());
            ++failed;
        }
        std::fflush(stdout);
    }
    std::printf("# %d passed, %d failed\n", passed, failed);
    return failed == 0 ? 0 : 1;
}
