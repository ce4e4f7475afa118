"""AHAS placement (decayed heat + query relevance, pressure feedback) and prefetch policies."""
