"""The stores: one subpackage per family of storage."""
