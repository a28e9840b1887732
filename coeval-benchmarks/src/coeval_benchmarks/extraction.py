"""Pull the answer out of what a model actually wrote.

Exact match on the raw reply scores "The answer is B." as wrong when the gold is "B"; on a
multiple-choice benchmark that turns every chatty, correct model into a failure and inverts
rankings. These functions find the answer in the forms models really use (a bare letter,
"(B)", "B) text", "Answer: b", "**C**", "#### 42", "the result is 42.0", "$1,234", an answer
followed by prose) and return None when there is none, which scores as wrong.

They never guess between candidates: a reply naming two different options in the same way
has no single answer.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from decimal import Decimal, InvalidOperation

__all__ = ["extract_choice", "extract_code", "extract_number", "parse_number"]

# ---- multiple choice ------------------------------------------------------------------------

_MARKUP = re.compile(r"(\*\*|__|`|\$|\\textbf\{|\\text\{|\\boxed\{|\\mathrm\{)")
_OPEN = r"[\(\[\{<]?"
_CLOSE = r"[\)\]\}>]?"
#: "answer is B", "Answer: b", "correct option would be (C)", "final answer - D", "I choose A".
#: A bare "option A" mention is not a statement: "the answer is D; option A is wrong" picks D.
_STATEMENT = re.compile(
    r"(?:answer|(?:correct|right|best|final|my)\s+(?:option|choice)|choose|chose|pick|select|go\s+with|going\s+with)"
    r"(?:s|ed)?"
    r"(?:\s+(?:is|would\s+be|should\s+be|will\s+be|=|:|-|->|of))*"
    r"\s*(?:(?:option|choice|letter)\s*)?[:\-]?\s*"
    rf"{_OPEN}\s*([A-Za-z])\s*{_CLOSE}(?![A-Za-z0-9'])",
    re.IGNORECASE,
)
#: "B) text", "B. text", "(B) text", "B: text", "[B]" at the very start of the reply.
_LEADING = re.compile(r"^\s*(?:\(([A-Za-z])\)|\[([A-Za-z])\]|([A-Z])\s*[\).:\]](?!\d))")
#: A line that is nothing but an option marker: "C", "(C)", "C.", "Option C".
_LONE = re.compile(rf"^\s*(?:option|choice|answer)?\s*[:\-]?\s*{_OPEN}\s*([A-Za-z])\s*{_CLOSE}\s*[.:)]?\s*$", re.I)
_PAREN = re.compile(r"\(([A-Z])\)")
#: "C is correct", "B is the right answer": a capital letter given a verdict.
_VERDICT = re.compile(
    rf"(?<![A-Za-z0-9']){_OPEN}([A-Z]){_CLOSE}\s+is\s+(?:the\s+)?(?:correct|right)(?:\s+(?:answer|option|choice))?\b"
)


def _plain(text: str) -> str:
    text = _MARKUP.sub("", text)
    return text.replace("}", " ").replace("*", "")


def _norm(text: str) -> str:
    return re.sub(r"[^a-z0-9]+", " ", text.lower()).strip()


def extract_choice(text: str | None, letters: str = "ABCD", options: Mapping[str, str] | None = None) -> str | None:
    """The option letter a reply picks (upper case), or None.

    ``letters`` are the valid option letters; ``options`` (letter -> text) lets a reply that
    quotes an option's text instead of its letter count.
    """
    if not text or not text.strip():
        return None
    valid = {c.upper() for c in letters}
    plain = _plain(text).strip()

    def ok(candidate: str | None) -> str | None:
        return candidate.upper() if candidate and candidate.upper() in valid else None

    # 1. The whole reply is an option marker.
    lone = _LONE.match(plain)
    if lone and ok(lone.group(1)):
        return ok(lone.group(1))
    # 2. An explicit statement; the last one is the model's final word. A lower-case letter
    #    counts only when nothing follows it on its line ("answer: b", not "answer is a cat").
    for match in reversed(list(_STATEMENT.finditer(plain))):
        letter = match.group(1)
        rest = plain[match.end() :].split("\n", 1)[0].strip()
        if letter.islower() and "(" not in match.group(0) and rest and not re.match(r"^[.,;:!)\]]", rest):
            continue
        if ok(letter):
            return ok(letter)
    # 2b. A verdict on exactly one option ("A is wrong. C is correct.").
    verdicts = {m for m in _VERDICT.findall(plain) if m in valid}
    if len(verdicts) == 1:
        return str(verdicts.pop())
    # 3. The reply opens with an option marker.
    leading = _LEADING.match(plain)
    if leading:
        letter = next(g for g in leading.groups() if g)
        if ok(letter):
            return ok(letter)
    # 4. A line of its own holding only an option marker (the last such line).
    for line in reversed(plain.splitlines()):
        lone = _LONE.match(line)
        if lone and ok(lone.group(1)) and (lone.group(1).isupper() or line.strip() != "a"):
            return ok(lone.group(1))
    # 5. A parenthesised capital, if the reply names exactly one option that way.
    named = {m for m in _PAREN.findall(plain) if m in valid}
    if len(named) == 1:
        return str(named.pop())
    # 6. The text of exactly one option.
    if options:
        reply = f" {_norm(plain)} "
        quoted = {
            letter.upper()
            for letter, option in options.items()
            if _norm(option) and f" {_norm(option)} " in reply and letter.upper() in valid
        }
        if len(quoted) == 1:
            return quoted.pop()
    return None


# ---- numbers --------------------------------------------------------------------------------

_NUMBER = r"[-−]?\s?\$?\s?(?:\d{1,3}(?:,\d{3})+|\d+)(?:\.\d+)?|[-−]?\s?\$?\.\d+"
_HASHES = re.compile(rf"####\s*\**\s*({_NUMBER})")
_BOXED = re.compile(rf"\\boxed\{{\s*\\?\$?\s*({_NUMBER})")
_STATED = re.compile(
    r"(?:final\s+answer|answer|result|total|solution)\s*(?:is|=|:|would\s+be|comes\s+to|equals|of)?"
    rf"\s*(?:approximately|about|exactly|just|only)?\s*[:=]?\s*\**\s*({_NUMBER})",
    re.IGNORECASE,
)
_ANY = re.compile(_NUMBER)
#: A stated answer written as its calculation, "the answer is 48 + 24 = 72": the result.
_CALCULATION = re.compile(rf"(?:\s*[-+*/x×÷]\s*(?:{_NUMBER}))+\s*=\s*({_NUMBER})")


def parse_number(text: str | None) -> Decimal | None:
    """A number as datasets and models write it: "1,234", "$5", "-3", "42.0", "7%", "−2"."""
    if text is None:
        return None
    cleaned = text.strip().replace("−", "-").replace("$", "").replace(",", "").replace("%", "")
    cleaned = re.sub(r"\s+", "", cleaned).rstrip(".")
    if not cleaned:
        return None
    try:
        value = Decimal(cleaned)
    except InvalidOperation:
        return None
    return value if value.is_finite() else None


def extract_number(text: str | None) -> Decimal | None:
    """The final numeric answer of a reply, or None.

    Order: the last ``#### n`` (GSM8K's own marker), the last ``\\boxed{n}``, the last stated
    answer ("the answer is n", "Total: n"), then the last number in the reply.
    """
    if not text:
        return None
    plain = text.replace("**", "")
    for pattern in (_HASHES, _BOXED, _STATED, _ANY):
        matches = list(pattern.finditer(plain))
        if matches:
            last = matches[-1]
            found = last.group(1) if pattern.groups else last.group(0)
            if pattern is _STATED:
                calculation = _CALCULATION.match(plain, last.end())
                if calculation:
                    found = calculation.group(1)
            value = parse_number(found)
            if value is not None:
                return value
    return None


# ---- code -----------------------------------------------------------------------------------

_FENCE = re.compile(r"```[ \t]*([A-Za-z0-9_+-]*)[^\n]*\n(.*?)(?:```|\Z)", re.DOTALL)


def extract_code(text: str | None, prefix: str | None = None) -> str:
    """The code of a reply without the lines it copied from ``prefix`` (signature, docstring).

    Takes the first fenced block that looks like Python (or the whole reply when unfenced),
    so that prose around the code and a restated docstring do not count as the answer.
    """
    if not text:
        return ""
    blocks = [(lang.lower(), body) for lang, body in _FENCE.findall(text)]
    code = text
    if blocks:
        python = [b for lang, b in blocks if lang in ("python", "py", "python3")]
        with_def = [b for _, b in blocks if "def " in b or "return" in b]
        code = (python or with_def or [blocks[0][1]])[0]
    if prefix:
        copied = {line.strip() for line in prefix.splitlines() if line.strip()}
        code = "\n".join(line for line in code.splitlines() if line.strip() not in copied)
        code = _drop_docstrings(code)
    return code.strip("\n")


def _drop_docstrings(code: str) -> str:
    """Remove triple-quoted blocks left after prefix lines were dropped (a paraphrased docstring)."""
    return re.sub(r'(?s)("""|\'\'\').*?\1', "", code)
