"""hmbuild: on-device LLM inference libraries for HarmonyOS NEXT apps."""

__version__ = "0.1.0"
