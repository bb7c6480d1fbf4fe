"""The report's pages and CSV files (instructor/report.md says how to read them).

Each page is one self-contained HTML file: its pictures are inline SVG drawn by matplotlib, its style is in
the page, and it runs no script and loads nothing (offline, no CDN). Every text that comes from the course
folder (a student's id, a reason in integrity.csv) is escaped. The assignment pages name no student and show
no student's code, no hidden test and no reference value: only points, shares, codes, the causes' names and
the chapter sections that teach them. The course page (index.html) names the students who may need help: it
is for the instructor's eyes only, like the whole folder, which only its owner may read (mode 0700).
"""

import csv
import html
import io
import os
import re
import statistics
from collections import Counter
from pathlib import Path

from .data import students_needing_help

FOLDER = "reports"
STYLE = """
:root { color-scheme: light; }
body { font: 16px/1.5 system-ui, -apple-system, "Segoe UI", Roboto, "DejaVu Sans", sans-serif; color: #1a1a1a;
       background: #fff; margin: 0 auto; padding: 1rem; max-width: 64rem; }
h1 { font-size: 1.6rem; line-height: 1.25; } h2 { font-size: 1.3rem; margin-top: 2rem; } h3 { font-size: 1.1rem; }
.scroll { overflow-x: auto; max-width: 100%; }
table { border-collapse: collapse; margin: 0.5rem 0; }
th, td { border-bottom: 1px solid #ccc; padding: 0.25rem 0.5rem; text-align: left; vertical-align: top; }
td.n, th.n { text-align: right; font-variant-numeric: tabular-nums; white-space: nowrap; }
th { white-space: nowrap; }
@media (max-width: 40rem) { body { padding: 0.5rem; } th, td { padding: 0.25rem 0.3rem; } }
figure { margin: 0.5rem 0; } figure svg { max-width: 100%; height: auto; display: block; }
figcaption { font-size: 0.9rem; color: #444; }
.flag { color: #8a1c00; font-weight: 600; }
.task { border-top: 2px solid #ddd; padding-top: 0.5rem; }
.grid { display: flex; flex-wrap: wrap; gap: 1rem; } .grid > * { flex: 1 1 18rem; min-width: 0; }
code { font-size: 0.95em; overflow-wrap: anywhere; }
td > code { overflow-wrap: normal; }
p, li, td, th { overflow-wrap: anywhere; }
"""


def esc(text) -> str:
    return html.escape(str(text), quote=True)


def name_html(name) -> str:
    """A task's name, escaped, free to break after each underscore (a phone's column is narrow)."""
    return esc(name).replace("_", "_<wbr>")


def section_name(section: str) -> str:
    """``"ch04_softmax_masking: Causal masks"`` -> ``"chapter 4, “Causal masks”"``."""
    m = re.fullmatch(r"ch0*(\d+)_\w*:\s*(.+)", section)
    return f"chapter {m.group(1)}, “{m.group(2)}”" if m else section


def percent(share) -> str:
    return f"{100 * share:.0f}%"


def fmt(value, digits=2, none="–"):
    return none if value is None else f"{value:.{digits}f}"


def _pyplot():
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    matplotlib.rcParams.update({"svg.hashsalt": "course-report", "svg.fonttype": "none", "font.size": 11,
                                "font.family": "DejaVu Sans"})
    return plt


def svg(fig, label) -> str:
    """A matplotlib figure as inline SVG, with a title for screen readers; the same bytes every run."""
    plt = _pyplot()
    buffer = io.StringIO()
    fig.savefig(buffer, format="svg", bbox_inches="tight", metadata={"Date": None, "Creator": None})
    plt.close(fig)
    text = buffer.getvalue()
    text = text[text.index("<svg"):]
    return text.replace("<svg ", f'<svg role="img" aria-label="{esc(label)}" ', 1)


def task_picture(task) -> str:
    """How many submissions got each number of points for one task (bars), the not-attempted part hatched."""
    plt = _pyplot()
    values = sorted(set(task.scores.values()) | {0.0, task.max_points})
    counts = Counter(task.scores.values())
    skipped = task.not_attempted
    fig, ax = plt.subplots(figsize=(3.6, 2.0))
    labels = [f"{v:g}" for v in values]
    heights = [counts.get(v, 0) for v in values]
    ax.bar(labels, heights, color="#4c72b0")
    if skipped:
        ax.bar([f"{0.0:g}"], [skipped], color="#ffffff", edgecolor="#c44e52", hatch="///",
               label="not attempted")
        ax.legend(frameon=False, fontsize=9)
    ax.set_xlabel(f"points (of {task.max_points:g})")
    ax.set_ylabel("submissions")
    ax.yaxis.get_major_locator().set_params(integer=True)
    ax.spines[["top", "right"]].set_visible(False)
    return svg(fig, f"points of {task.name}: " + ", ".join(f"{h} with {l}" for l, h in zip(labels, heights)))


def distribution_picture(reports) -> str:
    """Every assignment's totals, as percentages, side by side (one box and its points each)."""
    plt = _pyplot()
    # Narrow enough that a phone shows it near its natural size, so that its labels stay legible.
    fig, ax = plt.subplots(figsize=(max(3.6, 0.5 * len(reports) + 1.0), 3.0))
    data = [[100 * t / r.max_score for t in r.totals.values()] if r.max_score else [0.0] for r in reports]
    ax.boxplot(data, widths=0.5, showfliers=False)
    for n, values in enumerate(data, start=1):
        offsets = [((k % 7) - 3) * 0.04 for k in range(len(values))]
        ax.scatter([n + o for o in offsets], sorted(values), s=10, color="#4c72b0", alpha=0.7, zorder=3)
    ax.set_xticks(range(1, len(reports) + 1), [r.name.split("_")[0] for r in reports], rotation=90 if len(reports) > 5 else 0)
    ax.set_ylabel("total, % of the maximum")
    ax.set_ylim(-5, 105)
    ax.spines[["top", "right"]].set_visible(False)
    return svg(fig, "each assignment's totals in percent, side by side")


def task_rows(report):
    """The numbers of the tasks table and of tasks.csv, one dict per task."""
    rows = []
    for task in report.tasks:
        rows.append({
            "assignment": report.name, "task": task.name, "max_points": f"{task.max_points:g}",
            "submissions": task.n, "mean_points": f"{task.mean:.3f}", "full_marks": task.full,
            "share_full_marks": f"{task.share_full:.3f}", "not_attempted": task.not_attempted,
            "share_not_attempted": f"{task.share_not_attempted:.3f}",
            "median_verification_seconds": fmt(report.median_seconds, 2, ""),
            "discrimination": fmt(task.discrimination, 3, ""),
            "flags": "; ".join(task.flags()),
        })
    return rows


def cause_rows(report):
    rows = []
    for task in report.tasks:
        for code, count in task.cause_counts():
            name, section = report.cause_name(code)
            rows.append({"assignment": report.name, "task": task.name, "cause": code, "count": count,
                         "name": name, "section": section})
    return rows


def assignment_flags(report):
    flags = []
    if report.not_graded:
        flags.append(f"{len(report.not_graded)} submission(s) NOT GRADED in the last run (integrity.csv)")
    flagged = len(report.flagged) - len(report.not_graded)
    if flagged:
        flags.append(f"{flagged} submission(s) flagged in integrity.csv: their grade and verification disagree")
    if report.late:
        flags.append(f"{len(report.late)} late submission(s) (grades.csv, seconds_late)")
    return flags


def page(title, body) -> str:
    return (f'<!DOCTYPE html>\n<html lang="en">\n<head>\n<meta charset="utf-8">\n'
            f'<meta name="viewport" content="width=device-width, initial-scale=1">\n'
            f"<meta name=\"referrer\" content=\"no-referrer\">\n<title>{esc(title)}</title>\n"
            f"<style>{STYLE}</style>\n</head>\n<body>\n{body}\n</body>\n</html>\n")


def assignment_page(report) -> str:
    parts = [f"<h1>What the class understood: {esc(report.name)}</h1>",
             '<p><a href="index.html">The course</a> · <a href="tasks.csv">tasks.csv</a> · '
             '<a href="causes.csv">causes.csv</a></p>',
             f"<p>{report.n} graded submission(s), {report.max_score:g} points in all; median verification time "
             f"{fmt(report.median_seconds, 1)} s per submission. Discrimination is the corrected item-total "
             "correlation: Pearson's r between a task's points and the points of the assignment's other tasks "
             "(the point-biserial correlation, since a task earns all its points or none); – where either does "
             "not vary.</p>"]
    flags = assignment_flags(report)
    parts.append("<h2>Flags</h2>")
    task_flags = [(task.name, f) for task in report.tasks for f in task.flags()]
    if flags or task_flags:
        parts.append("<ul>" + "".join(f'<li class="flag">{esc(f)}</li>' for f in flags)
                     + "".join(f'<li class="flag">{esc(name)}: {esc(f)}</li>' for name, f in task_flags) + "</ul>")
    else:
        parts.append("<p>None.</p>")
    parts.append("<h2>Tasks</h2>")
    head = ["task", "points", "full marks", "not attempted", "mean", "discrimination"]
    parts.append('<div class="scroll"><table><thead><tr>' + "".join(
        f'<th{" class=n" if n else ""}>{esc(h)}</th>' for n, h in enumerate(head)) + "</tr></thead><tbody>")
    for task in report.tasks:
        parts.append(f"<tr><td><code>{name_html(task.name)}</code></td><td class=n>{task.max_points:g}</td>"
                     f"<td class=n>{percent(task.share_full)}</td><td class=n>{percent(task.share_not_attempted)}</td>"
                     f"<td class=n>{task.mean:.2f}</td><td class=n>{fmt(task.discrimination)}</td></tr>")
    parts.append("</tbody></table></div>")
    for task in report.tasks:
        parts.append(f'<section class="task"><h3><code>{name_html(task.name)}</code></h3><div class="grid">')
        parts.append(f"<figure>{task_picture(task)}<figcaption>Points of {task.n} submission(s): "
                     f"{task.full} with full marks ({percent(task.share_full)}), {task.not_attempted} not attempted "
                     f"({percent(task.share_not_attempted)}).</figcaption></figure>")
        counts = task.cause_counts()
        if counts:
            parts.append('<div><div class="scroll"><table><thead><tr><th>likely mistake</th><th class=n>count</th>'
                         "<th>taught in</th></tr></thead><tbody>")
            for code, count in counts:
                name, section = report.cause_name(code)
                parts.append(f"<tr><td>{esc(name)} <code>{esc(code)}</code></td><td class=n>{count}</td>"
                             f"<td>{esc(section_name(section)) or '–'}</td></tr>")
            parts.append("</tbody></table></div></div>")
        else:
            parts.append("<p>No submission lost points here.</p>")
        parts.append("</div>")
        for flag in task.flags():
            parts.append(f'<p class="flag">{esc(flag)}</p>')
        parts.append("</section>")
    return page(f"Report: {report.name}", "\n".join(parts))


def course_page(reports, students) -> str:
    parts = ["<h1>What the class understood: the course</h1>",
             "<p>For the instructor's eyes only: this page names students. Each assignment's own page names "
             'none. <a href="tasks.csv">tasks.csv</a> · <a href="causes.csv">causes.csv</a> · '
             '<a href="students.csv">students.csv</a></p>']
    if reports:
        parts.append(f"<h2>Every assignment side by side</h2><figure>{distribution_picture(reports)}"
                     "<figcaption>Each submission's total in percent of the maximum, one column per assignment "
                     "(the box holds the middle half; its line is the median).</figcaption></figure>")
    parts.append('<h2>Assignments</h2><div class="scroll"><table><thead><tr><th>assignment</th>'
                 "<th class=n>submissions</th><th class=n>median</th><th class=n>flags</th></tr></thead><tbody>")
    flagged = []
    for r in reports:
        flags = assignment_flags(r) + [f"{t.name}: {f}" for t in r.tasks for f in t.flags()]
        flagged.append((r, flags))
        parts.append(f'<tr><td><a href="{esc(r.name)}.html">{esc(r.name)}</a></td><td class=n>{r.n}</td>'
                     f"<td class=n>{statistics.median(r.totals.values()):g} / {r.max_score:g}</td>"
                     f"<td class=n>{len(flags)}</td></tr>")
    parts.append("</tbody></table></div><h2>Flags</h2>")
    for r, flags in flagged:
        if flags:
            parts.append(f'<h3><a href="{esc(r.name)}.html">{esc(r.name)}</a></h3><ul>'
                         + "".join(f'<li class="flag">{esc(f)}</li>' for f in flags) + "</ul>")
    if not any(flags for _, flags in flagged):
        parts.append("<p>None.</p>")
    help_ = students_needing_help(reports, students)
    parts.append("<h2>Students who may need help</h2>")
    if help_:
        parts.append("<ul>" + "".join(f"<li><code>{esc(s)}</code>: {esc('; '.join(why))}</li>" for s, why in help_)
                     + "</ul>")
    else:
        parts.append("<p>None: every student handed in every assignment, none is falling or below half.</p>")
    return page("Report: the course", "\n".join(parts))


def spreadsheet_safe(value):
    """A cell a spreadsheet will not run as a formula (a student id may start with = + - @)."""
    text = str(value)
    return "'" + text if re.match(r"[=+\-@\t\r]", text) and not re.fullmatch(r"-?\d+(\.\d+)?", text) else text


def write_csv(path, rows, columns):
    with open(path, "w", newline="", encoding="utf-8") as f:
        writer = csv.DictWriter(f, fieldnames=columns)
        writer.writeheader()
        for row in rows:
            writer.writerow({k: spreadsheet_safe(row[k]) for k in columns})


TASK_COLUMNS = ["assignment", "task", "max_points", "submissions", "mean_points", "full_marks", "share_full_marks",
                "not_attempted", "share_not_attempted", "median_verification_seconds", "discrimination", "flags"]
CAUSE_COLUMNS = ["assignment", "task", "cause", "count", "name", "section"]
STUDENT_COLUMNS = ["student_id", "why"]


def write_report(root: Path, reports, students) -> Path:
    """Write ``<root>/reports/``: index.html, one <assignment>.html each, tasks.csv, causes.csv and
    students.csv; readable by the course folder's owner only. Returns the folder."""
    folder = Path(root) / FOLDER
    if folder.is_symlink() or (folder.exists() and not folder.is_dir()):
        raise SystemExit(f"{folder} is not a folder: remove it, then run make report again")
    folder.mkdir(mode=0o700, exist_ok=True)
    os.chmod(folder, 0o700)
    old_umask = os.umask(0o077)
    try:
        for stale in folder.glob("*.html"):
            stale.unlink()
        for report in reports:
            (folder / f"{report.name}.html").write_text(assignment_page(report), encoding="utf-8")
        (folder / "index.html").write_text(course_page(reports, students), encoding="utf-8")
        write_csv(folder / "tasks.csv", [row for r in reports for row in task_rows(r)], TASK_COLUMNS)
        write_csv(folder / "causes.csv", [row for r in reports for row in cause_rows(r)], CAUSE_COLUMNS)
        write_csv(folder / "students.csv", [{"student_id": s, "why": "; ".join(why)}
                                            for s, why in students_needing_help(reports, students)],
                  STUDENT_COLUMNS)
    finally:
        os.umask(old_umask)
    for path in folder.iterdir():
        if path.is_file() and not path.is_symlink():
            os.chmod(path, 0o600)
    return folder
