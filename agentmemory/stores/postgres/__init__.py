"""The PostgreSQL journal."""
