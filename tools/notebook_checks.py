"""The helpers every assignment's test cells use, written once.

Each assignment's locked cell ``check_helpers`` begins with the code below the
line ``# --- shared by every assignment`` of this file, copied there by
``make release`` (tools/assignments/helper_cells.py); a test (tests/test_release_is_exactly_the_generated_one.py) fails if a
notebook's copy differs. The notebook must carry the text itself: a student
runs it alone, on a laptop, on Colab or on a hub. After the shared part, a
cell defines the helpers of its own assignment.

The helpers run in the student's kernel, on NumPy arrays (ex01) or torch
tensors: they look up ``torch`` and ``np`` in the notebook's own namespace.
Messages say what was expected and what came back, never a reference value.
"""

from __future__ import annotations

SHARED_START = "# --- shared by every assignment (tools/notebook_checks.py; `make release` copies it here) ---"

# --- shared by every assignment (tools/notebook_checks.py; `make release` copies it here) ---
import re  # noqa: E402


def _torch():
    # The notebook's torch, if it imported one.
    return globals().get("torch")


def expect_shape(name, got, expected, hint=""):
    # An array or tensor of shape `expected`. Where the notebook works with NumPy, nested lists count too, by the
    # shape NumPy reads from them.
    if hasattr(got, "shape"):
        got_shape = tuple(got.shape)
    elif isinstance(got, (list, tuple)) and _torch() is None:
        import numpy

        got_shape = numpy.shape(got)
    else:
        raise AssertionError(f"{name} should be an array of shape {tuple(expected)}, but it is a "
                             f"{type(got).__name__}. {hint}".rstrip())
    assert got_shape == tuple(expected), (
        f"{name} should have shape {tuple(expected)}, but it has shape {got_shape}. {hint}".rstrip()
    )


def expect_tensor(name, got):
    torch = _torch()
    assert torch is not None and isinstance(got, torch.Tensor), (
        f"{name} should return a torch.Tensor, but it returned a {type(got).__name__}."
    )


def expect_dtype(name, got, expected, hint=""):
    assert got.dtype == expected, f"{name} should have dtype {expected}, but it has dtype {got.dtype}. {hint}".rstrip()


def expect_finite(name, got, hint=""):
    # No inf or NaN anywhere; the message counts them and says where the first is.
    torch = _torch()
    if torch is not None and isinstance(got, torch.Tensor):
        bad = ~torch.isfinite(got)
        where = bad.nonzero()[0].tolist() if bad.any() else None
    else:
        import numpy

        bad = ~numpy.isfinite(numpy.asarray(got, dtype=float))
        where = numpy.argwhere(bad)[0].tolist() if bad.any() else None
    if where is not None:
        raise AssertionError(f"{name} contains inf or NaN ({int(bad.sum())} entries, the first at index "
                             f"{tuple(int(i) for i in where)}). {hint}".rstrip())


def names_shape(message, shape):
    # True if a message writes the shape in one of the usual ways, (3, 4), (3,4), [3, 4], torch.Size([3, 4]),
    # 3x4 or 3×4, and not as the start or end of a longer shape.
    written = re.findall(r"(?<![\w.])\d+(?:\s*(?:,|x|×)\s*\d+)*(?![\w.])(?!\s*(?:,|x|×)\s*\d)", str(message))
    sizes = [int(size) for size in shape]
    return any([int(n) for n in re.split(r"\s*(?:,|x|×)\s*", text)] == sizes for text in written)


def names_number(message, number):
    # True if a message writes the number on its own, not as part of a longer number or name.
    return re.search(rf"(?<![\w.]){number}(?!\w|\.\d)", str(message)) is not None


def expect_value_error(description, function, *args, names=(), numbers=()):
    # A ValueError whose message names each shape of `names` and each number of `numbers`.
    try:
        function(*args)
    except NotImplementedError:
        raise
    except Exception as error:
        assert isinstance(error, ValueError), (
            f"Expected a ValueError for {description}, but got {type(error).__name__}: {error}"
        )
        missing = [str(tuple(shape)) for shape in names if not names_shape(error, shape)]
        missing += [str(n) for n in numbers if not names_number(error, n)]
        assert not missing, f"The ValueError for {description} should name {' and '.join(missing)}; it says: {error}"
    else:
        raise AssertionError(f"Expected a ValueError for {description}, but the call returned normally.")


def expect_close(what, got, expected, *, atol, rtol, on="", cause=""):
    # Compares like torch.testing.assert_close (tensors) or numpy.testing.assert_allclose (arrays), but the
    # message says how far off and where, not the expected values. `on` names the input, `cause` a likely cause.
    on = f" on {on}" if on else ""
    torch = _torch()
    if torch is not None and (isinstance(got, torch.Tensor) or isinstance(expected, torch.Tensor)):
        try:
            torch.testing.assert_close(got, expected, atol=atol, rtol=rtol)
        except (AssertionError, TypeError, ValueError, RuntimeError) as error:
            lines = [line.strip() for line in str(error).splitlines() if line.strip()]
            detail = " ".join(line for line in lines
                              if line.startswith(("Mismatched", "Greatest absolute", "The values for attribute")))
            detail = re.sub(r"\d+\.\d{4,}(e[-+]?\d+)?", lambda number: f"{float(number.group()):.3g}", detail)
            raise AssertionError(f"{what} is wrong{on}: {detail or lines[0]} {cause}".rstrip()) from None
        return
    import numpy

    got = numpy.asarray(got, dtype=float)
    expected = numpy.asarray(expected, dtype=float)
    if got.shape != expected.shape:
        raise AssertionError(f"{what}{on} has shape {got.shape}; it should have shape {expected.shape}. {cause}".rstrip())
    try:
        numpy.testing.assert_allclose(got, expected, rtol=rtol, atol=atol)
    except AssertionError:
        diff = numpy.abs(got - expected)
        diff = numpy.where(numpy.isnan(diff), numpy.inf, diff)
        off = int(numpy.sum(~(diff <= atol + rtol * numpy.abs(expected))))
        where = tuple(int(i) for i in numpy.unravel_index(numpy.argmax(diff), diff.shape))
        raise AssertionError(
            f"{what} is wrong{on}: {off} of {diff.size} entries are off (allowed: {atol:g} + {rtol:g} × the size "
            f"of the entry); the largest difference is {numpy.max(diff):.3g}, at index {where}. {cause}".rstrip()
        ) from None


def rounded(values, digits=4):
    # A tensor's entries as a short list of rounded numbers, to quote your own output in a message.
    return [round(float(v), digits) for v in _torch().as_tensor(values).flatten()[:8]]
# --- end of the shared helpers ---

