"""The Python behind the Makefile: building the book, releasing and grading."""
