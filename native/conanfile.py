# The hmllm runtime as a Conan package, so a team builds it once per profile and shares the binary
# through a Conan remote (`hmbuild build --remote NAME`). A generated project vendors this file with
# the runtime (src/main/cpp/hmllm/conanfile.py); hmbuild exports that copy, so the binaries shared
# are those of the team's own vendored runtime (an edited copy is a new recipe revision).
# Without a remote, and in DevEco Studio, the project builds the runtime with add_subdirectory.
from conan import ConanFile
from conan.tools.cmake import CMake, CMakeToolchain, cmake_layout


class HmllmConan(ConanFile):
    name = "hmllm"
    version = "0.1.0"  # the runtime's version; hmbuild reads the reference from `conan export`
    description = "On-device LLM inference runtime (GGUF, INT4 kernels) behind hmbuild's NAPI library"
    license = "Apache-2.0"
    package_type = "static-library"
    settings = "os", "arch", "compiler", "build_type"
    # Always a position-independent static library (package_type): it ends up inside the shared
    # NAPI addon, so neither a shared build nor one without -fPIC is offered.
    options = {"fPIC": [True]}
    default_options = {"fPIC": True}
    # The library, its public headers and the command-line tools; tests, fuzz targets and the
    # NAPI layer stay with the project that vendors them.
    exports_sources = "CMakeLists.txt", "include/*", "src/*", "tools/*"

    def layout(self):
        cmake_layout(self)

    def generate(self):
        tc = CMakeToolchain(self)
        tc.user_presets_path = False
        tc.cache_variables["HMLLM_INSTALL"] = True
        tc.generate()

    def build(self):
        cmake = CMake(self)
        cmake.configure()
        cmake.build()

    def package(self):
        CMake(self).install()

    def package_info(self):
        self.cpp_info.libs = ["hmllm"]
        self.cpp_info.system_libs = ["hilog_ndk.z"] if self.settings.os == "OHOS" else ["pthread"]
