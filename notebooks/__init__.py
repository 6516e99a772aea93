"""The notebooks, their plain-Python sources, and the code that converts and executes them."""
