"""Gemini CLI as a transcript source (`~/.gemini/tmp/<project>/chats/`)."""
