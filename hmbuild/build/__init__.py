"""Building and running: the tool environment, Conan and CMake, the runtime's Conan package, test runners, the HAR, the ArkTS linter, doctor."""
