"""Text that reads like instructions to a model rather than a note: role markers and injection phrases.

Stored text is data (DESIGN.md section 8). A captured statement with such text is held for review instead of
promoted (``capture.statements``), and a memory with it is flagged in every block that shows it
(``inject.render``), so the model sees that the note itself carries instruction-shaped text.

- role markers: ``SYSTEM:`` / ``assistant:`` … opening a line or sentence (also ``system``, ``assistant`` and
  ``developer`` after a comma: "from now on, SYSTEM: …"), chat-template tokens
  (``<|im_start|>``, ``[INST]``, ``<<SYS>>``) and ``<system>``-like tags;
- injection phrases: "ignore previous …", "disregard …", "you are now", "new instructions", a download piped
  into a shell, ``base64 -d | …``, ``rm -rf /``, ``chmod 777``, ``eval(``, and sending secrets, keys or
  ``.env``/``.ssh`` files away.
"""

from __future__ import annotations

import re

ROLE_MARKER = re.compile(
    r"(?:^|\n|[.!?]\s)\s*(?:system|assistant|developer|user|human|tool)\s*:|[,;]\s*(?:system|assistant|developer)\s*:|"
    r"<\|?(?:im_start|im_end|system|endoftext)\|?>|"
    r"\[/?(?:INST|SYS)\]|<</?SYS>>|</?(?:system|assistant|instructions?)>", re.IGNORECASE)
INJECTION = re.compile(
    r"\bignore\s+(?:all\s+|any\s+)?(?:the\s+|your\s+|my\s+|these\s+)?(?:previous|prior|above|earlier)\b|\bdisregard\s+(?:all|any|the|"
    r"previous|prior|your)\b|\byou are now\b|\bnew instructions\b|\bjailbreak\b|"
    r"\b(?:curl|wget|fetch|iwr|Invoke-WebRequest)\b[^|\n]*\|\s*(?:sudo\s+)?(?:ba|z|k)?sh\b|\bbase64\s+-d\b[^|\n]*\|"
    r"|\brm\s+-rf\s+[/~]|\bchmod\s+(?:-R\s+)?777\b|\b(?:eval|exec)\s*\(|"
    r"\b(?:send|post|upload|exfiltrate|email|paste)\b[^.\n]{0,60}(?:\b(?:secrets?|tokens?|passwords?|"
    r"credentials?|api[ _-]?keys?|id_rsa)\b|\.env\b|\.ssh\b)", re.IGNORECASE)


def instruction_like(text: str) -> str:
    """Why ``text`` reads like instructions to a model ("role marker" or ``injection-like text: '<match>'``, the
    match cut to 60 characters), "" when it does not. Never raises."""
    if ROLE_MARKER.search(text):
        return "role marker"
    m = INJECTION.search(text)
    return f"injection-like text: {m.group(0)[:60]!r}" if m else ""
