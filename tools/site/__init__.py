"""The book's website: the build (book.py, ``make book``), the Sphinx extensions _config.yml names
(offline_mathjax, unique_scripts, lazy_images, figure_sizes) and the browser that looks at it
(browser.py, screenshots.py).
"""
