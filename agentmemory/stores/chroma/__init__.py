"""The Chroma vector index over a journal."""
