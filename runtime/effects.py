"""Effects: the values a tool yields (moved to _elicit_effects.py; re-exported)."""

from ._elicit_effects import LOG_LEVELS as LOG_LEVELS
from ._elicit_effects import AtOnce as AtOnce
from ._elicit_effects import Branch as Branch
from ._elicit_effects import Clock as Clock
from ._elicit_effects import Effect as Effect
from ._elicit_effects import Elicit as Elicit
from ._elicit_effects import ElicitUrl as ElicitUrl
from ._elicit_effects import Limits as Limits
from ._elicit_effects import ListRoots as ListRoots
from ._elicit_effects import LocalQuestion as LocalQuestion
from ._elicit_effects import Log as Log
from ._elicit_effects import LogLevel as LogLevel
from ._elicit_effects import Notice as Notice
from ._elicit_effects import Op as Op
from ._elicit_effects import PeerQuestion as PeerQuestion
from ._elicit_effects import Progress as Progress
from ._elicit_effects import Question as Question
from ._elicit_effects import RandomBits as RandomBits
from ._elicit_effects import ReleaseStream as ReleaseStream
from ._elicit_effects import RunBefore as RunBefore
from ._elicit_effects import Sample as Sample

__all__ = [
    "LOG_LEVELS",
    "AtOnce",
    "Branch",
    "ListRoots",
    "Clock",
    "Effect",
    "Elicit",
    "ElicitUrl",
    "Limits",
    "LocalQuestion",
    "Log",
    "LogLevel",
    "Notice",
    "Op",
    "PeerQuestion",
    "Progress",
    "Question",
    "RandomBits",
    "ReleaseStream",
    "RunBefore",
    "Sample",
]
