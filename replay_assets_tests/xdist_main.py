"""Stands for a pytest-xdist worker's main module (``conftest.py``): a real file, so that a child
started with multiprocessing's spawn, which runs the parent's main file, runs this empty one."""
