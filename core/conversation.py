"""What the customer said, as facts the gate can cite: the ids they stated, their explicit "yes", their reason.

The gate reads tool results; some rules are about the conversation instead. The upstream policies ask the
agent to "obtain the user id from the user" (airline) and to "obtain explicit user confirmation (yes) to
proceed" before a write; some decisions depend on the reason the customer gave (a cancellation covered by
insurance). This module turns one customer message into such facts, deterministically: regular expressions
and a fixed lexicon, no model call, no score. The ledger stores what it finds (`core.ledger.Ledger.hear`)
at canonical paths under `conversation.` with the message as provenance, and renders them like any entry.

- Stated ids (`conversation.stated.<name>`): every token of a message that has the form of a record id the
  domain declares (`IdForm`: an airline user id `mia_li_3668`, a reservation `UX789J`, a retail order
  `#W1234567`), written as the record writes it, in the order first stated. The form is the domain's; a
  token of that form is a stated id whatever the words around it.
- The confirmation (`conversation.confirmation`): whether the customer's latest message is an explicit
  affirmative, and the agent message it answers. An affirmative is a phrase of `AFFIRMATIVES` ("yes",
  "go ahead", "that's correct", ...) said as a statement (or as a polite request: "could you go ahead?")
  and not negated ("not correct", "don't proceed"). A hesitation ("wait", "hold on", "not yet", "actually",
  a leading "no", "before you ...") after the last affirmative overrides it; one before it is what the
  customer then decided past ("Actually, make it the card instead. Yes, go ahead."). Each customer message
  decides anew: the confirmation holds for the writes after it until the customer says something else.
  When in doubt the lexicon accepts: it is measured on real customers' messages, and a legal action must
  never be refused for its wording.
- The stated reason (`conversation.stated.reason`): the latest sentence of the customer's that holds one of
  the domain's reason cues ("because", "no longer need", "sick"). It is quoted to the operator beside the
  verdicts that depend on a reason, never judged: what counts as a covered reason is a person's call.

Nothing here knows a domain: domains declare their id forms and reason cues (`ConversationForms`) next to
their path maps.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from typing import Final

CONVERSATION_NAMESPACE: Final = "conversation"
STATED_PREFIX: Final = f"{CONVERSATION_NAMESPACE}.stated"
CONFIRMATION_PATH: Final = f"{CONVERSATION_NAMESPACE}.confirmation"
REASON_PATH: Final = f"{STATED_PREFIX}.reason"
SAID_BY_CUSTOMER: Final = "customer"  # Provenance.by of a fact the customer's message gave
CUSTOMER_MESSAGE: Final = "customer_message"  # Provenance.tool of such a fact
QUOTE_CHARS: Final = 80  # how much of a message a fact quotes: enough to recognise it, feedback stays short
MAX_STATED: Final = 20  # ids kept per form (oldest first); a message listing hundreds adds no evidence
NO_MESSAGES: Final = "no customer messages recorded"


def stated_path(name: str) -> str:
    return f"{STATED_PREFIX}.{name}"


def said_id(n: int) -> str:
    """The provenance id of the facts the `n`-th customer message heard gave (1-based): `said_<n>`."""
    return f"said_{n}"


@dataclass(frozen=True)
class IdForm:
    """A record id of the domain as a customer may write it: `pattern` finds one (a regular expression, matched
    where no letter, digit or `_` touches it), `canonical` writes it as the record does ("W1234567" ->
    "#W1234567"). The ids found land, in the order first stated, at `conversation.stated.<name>`."""

    name: str
    pattern: str
    canonical: Callable[[str], str] | None = None
    note: str = ""

    def __post_init__(self) -> None:
        object.__setattr__(self, "_regex", re.compile(rf"(?<![A-Za-z0-9_]){self.pattern}(?![A-Za-z0-9_])"))

    def find(self, text: str) -> Iterator[tuple[str, int, int]]:
        """(the id as the record writes it, start, end) of every id of this form in `text`, in order."""
        for match in self._regex.finditer(text):  # type: ignore[attr-defined]
            found = match.group(0)
            yield (self.canonical(found) if self.canonical is not None else found), match.start(), match.end()


@dataclass(frozen=True)
class ConversationForms:
    """What a domain lets the ledger take from the customer's messages: its id forms and its reason cues
    (lower-case phrases; a sentence holding one is the customer's stated reason)."""

    ids: tuple[IdForm, ...] = ()
    reason_cues: tuple[str, ...] = ()
    _reason: re.Pattern[str] | None = field(default=None, init=False, repr=False, compare=False)

    def __post_init__(self) -> None:
        if self.reason_cues:
            alternatives = "|".join(re.escape(cue) for cue in sorted(self.reason_cues, key=len, reverse=True))
            object.__setattr__(self, "_reason", re.compile(rf"\b(?:{alternatives})\b"))

    def stated_ids(self, text: str) -> dict[str, list[tuple[str, str]]]:
        """Per form name, the (id, quoted words around it) the message states, in order, each id once."""
        found: dict[str, list[tuple[str, str]]] = {}
        for form in self.ids:
            seen: dict[str, str] = {}
            for value, start, end in form.find(text):
                seen.setdefault(value, quote_around(text, start, end))
            if seen:
                found[form.name] = list(seen.items())
        return found

    def stated_reason(self, text: str) -> str | None:
        """The last sentence of the message that holds a reason cue, quoted; None when none does."""
        if self._reason is None:
            return None
        chosen: str | None = None
        for sentence in sentences(text):
            if self._reason.search(_normal(sentence.text)):
                chosen = sentence.text
        return None if chosen is None else quote(chosen)


# ---------------------------------------------------------------------------------------------------
# Quoting and sentences.


def quote(text: str, limit: int = QUOTE_CHARS) -> str:
    """`text` on one line, at most `limit` characters (cut at a space, marked with "…")."""
    flat = " ".join(text.split())
    if len(flat) <= limit:
        return flat
    cut = flat.rfind(" ", 0, limit)
    return flat[:cut if cut > limit // 2 else limit].rstrip() + "…"


def quote_tail(text: str, limit: int = QUOTE_CHARS) -> str:
    """The end of `text` on one line, at most `limit` characters: an agent's message ends with its question."""
    flat = " ".join(text.split())
    if len(flat) <= limit:
        return flat
    start = flat.find(" ", len(flat) - limit)
    return "…" + flat[start + 1 if 0 <= start < len(flat) - limit // 2 else len(flat) - limit:]


def quote_around(text: str, start: int, end: int, limit: int = QUOTE_CHARS) -> str:
    """The sentence holding text[start:end], quoted (centred on it when the sentence is long)."""
    for sentence in sentences(text):
        if sentence.start <= start and end <= sentence.end:
            if len(sentence.text) <= limit:
                return quote(sentence.text, limit)
            middle = (start + end) // 2 - sentence.start
            begin = max(0, middle - limit // 2)
            piece = sentence.text[begin:begin + limit]
            return ("…" if begin else "") + " ".join(piece.split()) + ("…" if begin + limit < len(sentence.text)
                                                                     else "")
    return quote(text[start:end], limit)


@dataclass(frozen=True)
class Sentence:
    text: str
    start: int
    end: int

    @property
    def question(self) -> bool:
        return self.text.rstrip().endswith("?")


_SENTENCE_END = re.compile(
    r"(?<=[.!?;])\s+|(?<=[.!?;][\"'\u201d\u2019)])\s+"  # after . ! ? ; (and a closing quote)
    r"|\n+"  # a line break
    r"|(?<=\S)\s+[-\u2013\u2014]+\s+|(?<=[a-z])[\u2013\u2014](?=[a-z])",  # a dash between words
    re.IGNORECASE)


def sentences(text: str) -> list[Sentence]:
    """The message cut into sentences (at . ! ? ; a line break or a dash between words), positions kept."""
    found: list[Sentence] = []
    position = 0
    for match in _SENTENCE_END.finditer(text):
        piece = text[position:match.start()]
        if piece.strip():
            found.append(Sentence(piece.strip(), position + len(piece) - len(piece.lstrip()), match.start()))
        position = match.end()
    piece = text[position:]
    if piece.strip():
        found.append(Sentence(piece.strip(), position + len(piece) - len(piece.lstrip()),
                              position + len(piece.rstrip())))
    return found


def _normal(text: str) -> str:
    """Lower case, straight apostrophes and quotes, single spaces: what the lexicon is written against."""
    text = text.replace("\u2019", "'").replace("\u2018", "'").replace("\u201c", '"').replace("\u201d", '"')
    return " ".join(text.lower().split())


# ---------------------------------------------------------------------------------------------------
# The confirmation lexicon, read off what real customers wrote (tau2-bench and tau-Trait recordings). All of it
# is matched against the message lower-cased, with straight apostrophes, as whole words.

# Phrases that say yes to what the agent described.
AFFIRMATIVES: Final = (
    "yes", "yeah", "yea", "yep", "yup", "sure", "ok", "okay", "o.k.", "alright", "all right",
    "confirm", "confirmed", "i confirm", "confirming", "correct", "that's right", "that is right",
    "go ahead", "go for it", "proceed", "please do", "do it", "do that", "let's do it", "let's do that",
    "sounds good", "sounds great", "sounds perfect", "sounds right", "looks good", "looks great", "looks right",
    "looks correct", "looks fine", "fine", "that works", "works for me", "that'd work", "perfect", "great",
    "absolutely", "of course", "certainly", "agreed", "i agree", "affirmative", "exactly",
    "precisely", "approved", "i approve", "i accept", "accepted", "by all means", "let's go",
    # requests for the action ("Please cancel order #W1", "Let's go with the blue one", "Please credit the
    # refund to my PayPal"): said to what the agent described, they tell it to act
    "please", "go with", "make the change", "make those changes", "make that change", "book it", "i'll take",
    "i will take", "i'll go with", "try again",
)
# Said as a yes although they hold a negation: read as "okay".
AS_OKAY: Final = ("no problem", "no worries", "not a problem", "no objection", "no objections")
# An instruction opening a sentence ("Cancel FDZ0T5 as listed.", "Just upgrade it to economy.") is a yes too. A
# wish ("I'd like to change both flights") is not: that is how a customer asks before anything was listed.
ACTION_VERBS: Final = (
    "book", "cancel", "change", "update", "modify", "upgrade", "downgrade", "add", "remove", "process", "make",
    "switch", "apply", "refund", "charge", "use", "schedule", "reschedule", "exchange", "return", "refuel",
    "place", "submit", "complete", "finalize", "finalise", "send", "issue", "credit", "go", "proceed", "move",
    "set", "enable", "resume", "pay", "put", "replace", "swap", "file", "start", "continue",
)
# Phrases holding an affirmative word that are no yes: asking for something else ("please let me know"),
# time ("right now"), doubt ("not sure"), a check asked of the agent ("can you confirm", "just to confirm").
NOT_AFFIRMATIVE: Final = (
    "right now", "right away", "please let me know", "please tell me", "please check", "please confirm",
    "please verify", "please explain", "please help", "please provide", "please clarify", "please advise",
    "please hold", "please wait", "please look", "please find", "please show", "please list", "please send me",
    "please give me", "please search", "please double-check", "please double check", "please transfer",
    "please don't", "please do not", "please no", "please note", "please keep in mind", "please be",
    "please hurry", "please make sure", "please ensure", "go with me", "sure if", "sure whether", "sure what",
    "sure how", "sure that", "not sure", "fine print", "correct me", "right?", "ok?", "okay?", "fine?",
    "just to confirm", "to confirm that", "to confirm whether", "can you confirm", "could you confirm",
    "can you please confirm", "could you please confirm", "confirm whether", "confirm if",
)
# Hesitations: said after the last yes, they take it back (or it never was one); said before it, they are what
# the customer then decided past ("Actually, make it the card. Yes, go ahead.").
HESITATIONS: Final = (
    "wait", "hold on", "hang on", "hold off", "not yet", "not sure", "i'm not sure", "unsure", "let me think",
    "let me check", "let me double check", "let me double-check", "i need to think", "i'll think",
    "changed my mind", "change my mind", "on second thought", "never mind", "nevermind", "actually", "stop",
    "verify", "before you", "before you proceed", "before proceeding", "before we", "before that", "before any",
    "before canceling", "before cancelling", "before booking", "before attempting", "before making",
    "before changing", "before doing", "before processing", "but first", "first, can you", "first, could you",
    "can you first", "could you first", "no", "nope", "nah",
)
# Hesitations that count only where they open a sentence ("Actually, ...", "No, ...", "Wait, ..."): inside one
# they are ordinary words ("how much I'm actually saving", "no other changes", "I can't wait").
LEADING_ONLY: Final = frozenset({"no", "nope", "nah", "actually", "wait", "stop"})
# Negations: among the NEGATION_REACH words before a yes, in its clause, they make it none ("not correct",
# "don't go ahead"); "No, go ahead" is a yes (its "No," is a clause of its own).
NEGATIONS: Final = ("not", "don't", "do not", "dont", "never", "no", "isn't", "is not", "wasn't", "can't",
                    "cannot", "won't", "doesn't", "didn't", "hardly", "neither", "nor", "without")
NEGATION_REACH: Final = 3
# What an agent message says when it asks the customer to confirm or choose something: the customer's first
# message answering a message without any (the greeting) is their opening request, never a yes.
ASKS_TO_CONFIRM: Final = (
    "confirm", "proceed", "go ahead", "shall i", "should i", "would you like me to", "do you want me to",
    "would you like to", "do you want to", "is that correct", "is this correct", "is that right",
    "is this right", "are you sure", "yes or no", "(yes", "yes/no", "okay to", "ok to", "would you prefer",
    "which would you like", "let me know if", "like to continue",
)
OPENING: Final = "their opening request"


def _phrases(phrases: tuple[str, ...]) -> re.Pattern[str]:
    alternatives = "|".join(re.escape(p) for p in sorted(phrases, key=len, reverse=True))
    return re.compile(rf"(?<![\w'])(?:{alternatives})(?![\w'])")


_AFFIRMATIVE = _phrases(AFFIRMATIVES)
_AS_OKAY = _phrases(AS_OKAY)
_NOT_AFFIRMATIVE = _phrases(NOT_AFFIRMATIVE)
_HESITATION = _phrases(HESITATIONS)
_NEGATION = _phrases(NEGATIONS)
_ASKS = _phrases(ASKS_TO_CONFIRM)
_IMPERATIVE = re.compile(r"^(?:(?:just|then|so|and|now|also|ok|okay|yes|please)[,!]?\s+)*(?:"
                         + "|".join(ACTION_VERBS) + r")\b")
# "Confirm that ...", "confirm whether ...": a check asked of the agent ("I confirm that" and "yes, confirm the
# booking" still say yes).
_CHECK_REQUEST = re.compile(r"(?<!\bi )(?<!\bi do )(?<!\byes, )(?<!\byes )\bconfirm(?= (?:that|whether|if|the|these|"
                            r"this|all|exactly|how|what|which|my|your|with|for|it's|its|there)\b)")
# A question that is a polite request ("could you please go ahead?") can still say yes; any other cannot.
_POLITE_REQUEST = re.compile(r"^(?:\w+,?\s+)?(?:can|could|would|will)\s+you\b")
# After a leading "no", what makes it a refusal ("No, ...", "No thanks") rather than a quantifier ("No other
# changes needed", "No baggage needed").
_REFUSING_NO = re.compile(r"\s*(?:[,.!;:\u2014\u2013-]|$)|\s+(?:thanks|thank you|wait|don't|do not|not|that's not|"
                          r"that is not|it's not|stop|hold|hang|never|i don't|i do not|i'm not|i am not)\b")
_INTERJECTIONS = frozenset({"oh", "um", "uh", "well", "hmm", "ah", "sorry"})
_WORD = re.compile(r"[\w']+")


@dataclass(frozen=True)
class Confirmation:
    """What one customer message says to the agent's last description: an explicit yes or not, the customer's
    words (quoted) and, when not, why (what overrode it, or that nothing in it is a yes)."""

    confirmed: bool
    words: str
    why: str = ""


def asks_to_confirm(agent_message: str | None) -> bool:
    """Whether the agent's message asks the customer to confirm or choose something (ASKS_TO_CONFIRM)."""
    return agent_message is not None and _ASKS.search(_normal(agent_message)) is not None


def _blank(match: re.Match[str]) -> str:
    return " " * len(match.group(0))


def _prepared(sentence: str) -> str:
    """A sentence as the lexicon reads it: normalised, "no problem" read as "okay", and the phrases that hold a
    yes word without saying yes blanked out (same length, so positions stay put)."""
    said = _AS_OKAY.sub(lambda m: "okay".ljust(len(m.group(0))), _normal(sentence))
    return _CHECK_REQUEST.sub(_blank, _NOT_AFFIRMATIVE.sub(_blank, said))


def _negated(sentence: str, start: int) -> bool:
    clause = re.split(r"[,:()]", sentence[:start])[-1]
    return _NEGATION.search(" ".join(_WORD.findall(clause)[-NEGATION_REACH:])) is not None


def _leading(sentence: str, start: int) -> bool:
    """Whether position `start` opens the sentence (after an interjection such as "oh," or "um,")."""
    head = sentence[:start].strip(" ,.!")
    return not head or head in _INTERJECTIONS


def confirmation_of(text: str, answers: str | None = None, *, first: bool = False) -> Confirmation:
    """Whether `text`, the customer's message answering the agent's message `answers` (None: no agent message
    was heard), explicitly confirms what the agent described, with the words that decided it.

    The last yes of the message decides, unless a hesitation follows it. A yes is an affirmative phrase or an
    instruction said as a statement (or a polite request), not negated right before. `first`: the first
    customer message heard; answering an agent message that asked nothing (a greeting), it is the customer's
    opening request, never a confirmation ("even basic economy is fine" says what they want, not yes to
    details nobody has listed)."""
    if first and answers is not None and not asks_to_confirm(answers):
        return Confirmation(False, quote(text), OPENING)
    last_yes: tuple[int, int] | None = None  # (sentence, position) of the last yes
    last_doubt: tuple[int, int, str] | None = None  # (sentence, position, the word) of the last hesitation
    pieces = sentences(text)
    for number, sentence in enumerate(pieces):
        said = _prepared(sentence.text)
        for match in _HESITATION.finditer(said):
            word = match.group(0)
            if word in LEADING_ONLY and not _leading(said, match.start()):
                continue
            if word in ("no", "nope", "nah") and _REFUSING_NO.match(said, match.end()) is None:
                continue
            last_doubt = (number, match.start(), word)
        if sentence.question and _POLITE_REQUEST.search(said) is None:
            continue  # a question holds no yes ("is that correct?"); an earlier statement's yes still counts
        yeses = [m.start() for m in _AFFIRMATIVE.finditer(said) if not _negated(said, m.start())]
        if _IMPERATIVE.match(said.strip()):
            yeses.append(0)
        if yeses:
            last_yes = (number, max(yeses))
    if last_yes is None:
        asked = any(s.question for s in pieces)
        why = (f"'{last_doubt[2]}', no yes" if last_doubt is not None
               else "a question, no yes" if asked else "no explicit yes")
        return Confirmation(False, quote(text), why)
    if last_doubt is not None and last_doubt[:2] > last_yes:
        return Confirmation(False, quote(text), f"'{last_doubt[2]}' after the yes")
    return Confirmation(True, quote(_with_context(pieces, last_yes[0])))


def _with_context(pieces: list[Sentence], index: int) -> str:
    """The words quoted for a yes: its sentence, with the one before when both are short ("Yes. Go ahead.")."""
    chosen = pieces[index].text
    if index and len(pieces[index - 1].text) + len(chosen) < QUOTE_CHARS // 2:
        return f"{pieces[index - 1].text} {chosen}"
    return chosen
