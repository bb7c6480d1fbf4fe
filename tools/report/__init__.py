"""What the class understood: the instructor's report on a graded course (`make report`).

``tools.report.data`` reads what `make grade` left in the course folder (the gradebook, causes.csv,
integrity.csv) into per-task numbers; ``tools.report.pages`` writes them as HTML pages with their
pictures (inline SVG, drawn by matplotlib) and as CSV, into ``<course>/reports/``, readable by the
course folder's owner only. instructor/report.md says how to read them.
"""
