"""The sqlite journal."""
