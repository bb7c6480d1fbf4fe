"""What a student gets back: the feedback notebook without the hidden tests
(hide_hidden_tests.py) and the HTML page it becomes (page.py, templates/).
"""
