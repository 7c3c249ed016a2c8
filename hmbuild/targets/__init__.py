"""Targets: the one resolved Target value and the toolchains that fill it (GCC, zig, the OpenHarmony SDK), Node."""
