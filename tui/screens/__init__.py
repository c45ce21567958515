"""The app's screens, one module each: the main screen, the checkpoint and its idea picker, the
note, help, no-model, error and quit screens. Screens never talk to the engine: the main screen
renders what the app hands it, and modals return their answer through ``dismiss``.
"""

from .checkpoint import CheckpointScreen
from .confirm_quit import ConfirmQuitScreen
from .error import ErrorScreen
from .help import HelpScreen, KeyGroups
from .idea_picker import IdeaPickerScreen
from .main import MainScreen
from .no_model import EXIT_NO_MODEL, ModelCheck, NoModelScreen
from .note import NoteScreen

__all__ = [
    "EXIT_NO_MODEL",
    "CheckpointScreen",
    "ConfirmQuitScreen",
    "ErrorScreen",
    "HelpScreen",
    "IdeaPickerScreen",
    "KeyGroups",
    "MainScreen",
    "ModelCheck",
    "NoModelScreen",
    "NoteScreen",
]
