"""Model providers: one small async interface, one module per SDK."""
