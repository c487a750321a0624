"""The compiler's stages, each usable on its own."""
