"""The word tables :mod:`active_memory.admission.graph_advice` reads, kept apart from its logic.

Every entry is folded text without accents (``desactivez``, ``uberspringe``, ``prufer``), as
:func:`active_memory.admission.graph_advice._plain` reads a card. English comes first; French,
German and Spanish add their verbs and the nouns of checking. A target in :data:`GUARDS` and
:data:`INSTRUCTION_GUARDS` matches with an ``s``/``es`` plural too.
"""

from __future__ import annotations

import re

__all__ = [
    "FOREIGN_VERBS_LAST",
    "GENERIC",
    "GUARDS",
    "INSTRUCTION_ACTS",
    "INSTRUCTION_GUARDS",
    "STOP",
    "STRAIGHT_SUBVERSIONS",
    "VERBS",
]

# What checks a node's work: its verifier, a review, the tests, CI, a linter, a type checker.
GUARDS: tuple[str, ...] = (
    # English
    "verifier", "verification", "validator", "validation", "review", "reviewer", "check",
    "checker", "test", "test suite", "suite", "ci", "ci job", "pipeline", "linter", "lint",
    "linting", "lint rule", "type check", "type checker", "typecheck", "mypy", "ruff", "eslint",
    "flake8", "pylint", "pre-commit", "hook", "gate", "quality gate", "assertion", "assert",
    "coverage", "verdict", "rejection", "objection", "feedback", "approval", "judge", "grader",
    "critic",
    # French
    "verificateur", "relecteur", "relectrice", "relecture", "revue", "reviseur", "controle",
    "integration continue", "avis",
    # German
    "prufer", "prufung", "prufungen", "prufschritt", "verifizierer", "gutachter", "testsuite",
    "urteil", "freigabe",
    # Spanish
    "verificador", "verificacion", "revisor", "revision", "prueba", "comprobacion", "veredicto",
)  # fmt: skip

# What a node's authored instructions are called, in the four languages.
INSTRUCTION_GUARDS: tuple[str, ...] = (
    "instruction", "authored instruction", "node instruction", "output contract", "consigne",
    "anweisung", "anweisungen", "vorgabe", "instruccion",
)  # fmt: skip

# Acts that put a check out of play, in the order verb → target (English, French, Spanish, and
# German main clauses: "ueberspringe die Tests").
VERBS = (
    r"ignor(?:e|es|ing)|disregard(?:ing)?|skip(?:ping)?|bypass(?:ing)?|circumvent(?:ing)?|"
    r"sidestep(?:ping)?|evad(?:e|ing)|dodg(?:e|ing)|overrid(?:e|ing)|overrul(?:e|ing)|"
    r"disabl(?:e|ing)|deactivat(?:e|ing)|turn(?:ing)?\s+off|switch(?:ing)?\s+off|"
    r"silenc(?:e|ing)|suppress(?:ing)?|mut(?:e|ing)|comment(?:ing)?\s+out|"
    r"short-?circuit(?:ing)?|(?:get|getting|work|working|go|going|route|routing)\s+around|"
    r"omit(?:ting)?|neutrali[sz](?:e|ing)|defeat(?:ing)?|"
    # French
    r"ignor(?:er|ez|ons)|contourn(?:e|er|ez|ons)|desactiv(?:e|er|ez|ons)|saut(?:e|er|ez|ons)|"
    r"outrepass(?:e|er|ez)|passe[rz]?\s+outre\s+(?:a|au|aux)|omet(?:s|tre|tez)|"
    r"court-?circuit(?:e|er|ez)|neutralis(?:e|er|ez)|"
    # German
    r"ignorier(?:e|en|t)?|uberspring(?:e|en|t)?|umgeh(?:e|en|t)?|deaktivier(?:e|en|t)?|"
    r"schalte\s+(?:den|die|das)|missacht(?:e|en|et)?|ubergeh(?:e|en|t)?|"
    # Spanish
    r"ignor(?:ar|a|en)|omit(?:ir|e|a|as|an)|salt(?:ar|a|es|arse|ate|arte)|elud(?:ir|e|a|as)|"
    r"desactiv(?:ar|a|es)|sorte(?:ar|a|es)|pasa(?:r)?\s+por\s+alto|evit(?:ar|a|es)"
)

# German subordinate and infinitive clauses put the verb last: "die Tests ueberspringen".
FOREIGN_VERBS_LAST = (
    r"ignorieren|ignoriert|uberspringen|ubersprungen|umgehen|umgangen|deaktivieren|deaktiviert|"
    r"abschalten|abgeschaltet|ausschalten|ausgeschaltet|missachten|ubergehen|aushebeln|"
    r"links\s+liegen\s+lassen"
)

_G = "|".join(re.escape(term).replace(r"\ ", r"\s+") for term in GUARDS)
_THE = r"(?:(?:the|any|all|its|their|this|that|these|those|every|a|an)\s+)?"
_PARTIAL = r"(?:full|whole|entire|complete)\s+(?:test\s+)?(?:suite|tests?|checks?|ci|pipeline)"

# Subversions that need no separate verb and target: a check declared optional, a check not
# run, a resubmission that ignores the verdict, a suppression comment, a weakened test.
STRAIGHT_SUBVERSIONS: tuple[str, ...] = (
    rf"\b(?:{_G})(?:s|es)?(?:\s+\w+)?\s+(?:can|may|could|should|are\s+allowed\s+to|is\s+allowed\s+to)\s+"
    r"(?:safely\s+|always\s+|just\s+)?be\s+(?:skipped|ignored|bypassed|disabled|omitted|"
    r"turned\s+off|left\s+out|switched\s+off)",
    rf"\b(?:{_G})(?:s|es)?\s+(?:is|are)\s+(?:optional|unnecessary|redundant|a\s+formality|"
    r"not\s+(?:needed|required|necessary))",
    rf"\b(?:no\s+need|unnecessary|not\s+necessary|pointless)\s+(?:to|for)\s+(?:(?:re)?run(?:ning)?"
    rf"\s+|wait(?:ing)?\s+for\s+|call(?:ing)?\s+|ask(?:ing)?\s+)?{_THE}(?:{_G})(?:s|es)?\b",
    rf"\b(?:don't|do\s+not|never)\s+bother\s+(?:with|running|to\s+run|calling|asking)\s+{_THE}"
    rf"(?:\w+\s+)?(?:{_G})(?:s|es)?\b",
    r"\bavoid(?:ing)?\s+the\s+(?:verifier|review|reviewer|review\s+step|linter|ci|quality\s+gate|"
    r"type\s+checker)\b",
    rf"\b(?:don't|do\s+not|never)\s+(?:ever\s+)?(?:run|execute|wait\s+for|call|invoke|ask)\s+"
    rf"{_THE}"
    rf"(?:\w+\s+)?(?:{_G})(?:s|es)?"
    r"(?=\s*(?:[.;:!?,]|$)|\s+(?:when|if|for|unless|at\s+all|anymore|any\s+more)\b)",
    rf"\b(?:without|instead\s+of|rather\s+than)\s+(?:running|waiting\s+for|calling|asking|"
    rf"passing|consulting|invoking|executing)\s+{_THE}(?:\w+\s+)?(?:{_G})(?:s|es)?\b",
    rf"\b(?:instead\s+of|rather\s+than|not)\s+(?:running\s+)?(?:the\s+)?{_PARTIAL}",
    r"\b(?:re-?submit(?:ting)?|submit(?:ting)?\s+(?:it\s+)?again|send(?:ing)?\s+(?:it\s+)?back)"
    r"\s+(?:it\s+|the\s+same\s+\w+\s+|the\s+\w+\s+)?(?:unchanged|as\s+is|as-is|verbatim|"
    r"without\s+(?:any\s+)?(?:changes?|changing|modifications?|fixing))",
    r"\bre-?submit(?:ting)?\s+(?:it\s+|the\s+)?(?:identical|unchanged|untouched)\b",
    # The same work sent back for judging, with no fix in between ("just resubmit the same patch").
    r"\bre-?submit(?:ting)?\s+(?:the\s+)?(?:same|identical)\s+(?:patch|diff|change|changes|pr|"
    r"pull\s+request|commit|code|answer|output|work)\b(?!\s+(?:after|once|with|but|when)\b)",
    rf"\b(?:trick|fool|game|cheat|placate|appease)\s+{_THE}(?:\w+\s+)?(?:{_G})(?:s|es)?\b",
    # A check named, then put aside by a pronoun: "when the reviewer rejects, disregard it".
    rf"\b(?:{_G}|rejects?|rejected|says\s+no|complains?|flags?)\b(?:(?!\b(?:not|never|don't|no)\b)"
    r"[^.;:!?]){0,60}?\b(?:ignore|ignoring|disregard(?:ing)?|overrul(?:e|ing)|overrid(?:e|ing)|"
    r"dismiss(?:ing)?|silenc(?:e|ing)|suppress(?:ing)?|mut(?:e|ing)|disabl(?:e|ing)|"
    r"bypass(?:ing)?|skip(?:ping)?)\s+(?:it|that|them|this)\b",
    rf"\btreat(?:ing)?\s+{_THE}(?:\w+'s\s+)?(?:{_G})(?:s|es)?\s+as\s+(?:advisory|optional|noise|"
    r"non-blocking|informational|(?:a\s+)?suggestions?)\b",
    rf"\b(?:hand(?:ing)?\s+over|submit(?:ting)?|merg(?:e|ing)|push(?:ing)?|answer(?:ing)?)\s+"
    rf"(?:\w+\s+)?before\s+{_THE}(?:{_G})(?:s|es)?\s+(?:finish(?:es)?|runs?|has\s+run|"
    r"completes?|answers?|repl(?:y|ies)|reports?)\b",
    r"\bso\s+(?:that\s+)?(?:nothing|no\s+\w+)\s+(?:is|are|gets|get)\s+(?:flagged|reported|"
    r"caught|checked)\b",
    rf"\bpretend(?:ing)?\s+(?:that\s+)?{_THE}(?:{_G})(?:s|es)?\b",
    rf"\b(?:claim|report|say|state|write|tell\s+\w+)\s+(?:that\s+)?{_THE}(?:{_G})(?:s|es)?\s+"
    r"(?:as\s+)?(?:passed|pass|green|succeeded|are\s+green|were\s+green|ok)\b(?=[^.;:!?]{0,40}"
    r"\b(?:even|regardless|without|although|though|(?:if|when)\s+(?:they|it)\s+(?:fail|time|"
    r"crash|error|hang|do\s+not|don't)))",
    # "no hagas caso al revisor", "ne tenez pas compte du relecteur": both mean "ignore".
    rf"\bno\s+(?:hagas|hagan|haga|hacer)\s+caso\s+(?:a|al|a\s+la|a\s+los|a\s+las)\s+"
    rf"(?:\w+\s+)?(?:{_G})",
    rf"\bne\s+(?:tenez|tiens|tenir)\s+pas\s+compte\s+(?:du|de\s+la|des|de\s+l')\s*"
    rf"(?:\w+\s+)?(?:{_G})",
    r"\b(?:until|till)\s+the\s+(?:verifier|reviewer|review|checker|judge)\s+gives\s+up\b",
    r"\b(?:add(?:ing)?|us(?:e|ing)|put(?:ting)?|insert(?:ing)?|sprinkl(?:e|ing))\s+(?:an?\s+|the\s+)?"
    r"(?:#\s*noqa|#\s*type:\s*ignore|#\s*pragma:\s*no\s*cover|eslint-disable|pylint:\s*disable|"
    r"@?pytest\.mark\.(?:skip|xfail)|//\s*nolint|@ts-ignore|@ts-nocheck|(?:skip|xfail)\s+markers?)",
    r"\b(?:delet(?:e|ing)|remov(?:e|ing)|weaken(?:ing)?|loosen(?:ing)?|relax(?:ing)?)\s+(?:the\s+|"
    r"any\s+)?(?:failing|flaky|broken|red|offending|strict)\s+(?:tests?|assertions?|asserts?|checks?)",
    r"\bmark(?:ing)?\s+(?:the\s+)?(?:failing\s+|flaky\s+|broken\s+)?tests?\s+as\s+(?:skipped|xfail|"
    r"expected\s+to\s+fail)",
    r"\blower(?:ing)?\s+(?:the\s+)?coverage\s+(?:threshold|target|bar|minimum)",
    r"\b(?:continue-on-error|allow_failure|allow-failure)\s*[:=]?\s*true\b",
)

# An act the node's instructions demand, and its object ("run the full test suite").
INSTRUCTION_ACTS = re.compile(
    r"\b(?:run|execute|update|add|include|write|keep|call|check|verify|follow|ensure|sign|bump|"
    r"record|document|attach|cite|regenerate|format|mention|list|fill\s+in|link|tag|label|"
    r"request|wait\s+for|get)\s+(?P<object>(?:[^\s.;:!?,]+\s+){0,3}[^\s.;:!?,]+)"
)

# Function words, in the four languages; never a target and never content.
STOP: frozenset[str] = frozenset(
    {
        "a", "an", "the", "and", "or", "but", "if", "then", "so", "to", "of", "in", "on", "at",
        "by", "for", "from", "with", "without", "into", "onto", "as", "is", "are", "was", "were",
        "be", "been", "being", "it", "its", "this", "that", "these", "those", "there", "here",
        "you", "your", "yours", "we", "our", "us", "they", "them", "their", "he", "she", "his",
        "her", "i", "me", "my", "do", "does", "did", "don't", "not", "no", "never", "always",
        "only", "also", "just", "any", "all", "every", "each", "some", "new", "full", "whole",
        "entire", "complete", "before", "after", "when", "while", "until", "unless", "once",
        "again", "more", "most", "less", "than", "too", "very", "can", "could", "may", "might",
        "must", "should", "shall", "will", "would", "have", "has", "had", "one", "two", "first",
        "last", "next", "other", "same", "such", "what", "which", "who", "whom", "how", "why",
        "where", "whether", "up", "down", "out", "over", "under", "about", "via", "per", "le",
        "la", "les", "un", "une", "des", "du", "de", "et", "ou", "pour", "avec", "sans", "dans",
        "sur", "est", "sont", "ne", "pas", "der", "die", "das", "den", "dem", "ein", "eine",
        "einen", "und", "oder", "mit", "ohne", "fur", "ist", "sind", "nicht", "sois", "soyez",
        "ton", "ta", "tes", "votre", "vos", "deine", "dein", "deinen", "tu", "tus", "el", "los",
        "las", "una", "unos", "y", "o", "con", "sin", "en", "por", "para", "es", "son"
    }
)  # fmt: skip

# Words that alone give no advice a node could act on: "be thorough and double-check your work".
GENERIC: frozenset[str] = frozenset(
    {
        "thorough", "thoroughly", "careful", "carefully", "diligent", "diligently", "attentive",
        "rigorous", "rigorously", "precise", "precisely", "accurate", "accurately", "correct",
        "correctly", "proper", "properly", "good", "great", "better", "best", "high", "quality",
        "clean", "clear", "clearly", "consistent", "consistently", "complete", "completely",
        "robust", "double", "check", "checks", "checking", "recheck", "re", "twice", "verify",
        "verified", "review", "reread", "read", "work", "output", "outputs", "answer", "answers",
        "result", "results", "task", "tasks", "job", "solution", "solutions", "approach",
        "effort", "mistake", "mistakes", "error", "errors", "problem", "problems", "issue",
        "issues", "thing", "things", "everything", "anything", "nothing", "something", "sure",
        "make", "makes", "ensure", "pay", "attention", "detail", "details", "focus", "think",
        "thinking", "step", "steps", "time", "take", "slow", "slowly", "rush", "hurry",
        "important", "importantly", "remember", "consider", "edge", "case", "cases", "practice",
        "practices", "follow", "instruction", "instructions", "requirement", "requirements",
        "understand", "assumption", "assumptions", "assume", "avoid", "miss", "overlook",
        "sloppy", "keep", "mind", "look", "closely", "fully", "really", "truly", "well", "be",
        "being", "stay", "remain", "try", "hard", "hardest", "rigoureux", "rigoureuse",
        "soigneux", "soigneuse", "attentif", "verifie", "verifiez", "travail", "fois", "deux",
        "grundlich", "sorgfaltig", "genau", "prufe", "prufen", "arbeit", "doppelt", "sei",
        "seien", "sein", "minucioso", "minuciosa", "cuidadoso", "cuidadosa", "revisa", "revise",
        "trabajo", "veces", "dos", "se"
    }
)  # fmt: skip
