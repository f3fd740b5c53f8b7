"""The Markdown folder."""
