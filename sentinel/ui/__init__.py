"""What CLI, chat and watch render: helpers every user interface shares (sentinel/ui/escape.py: agent text made
safe to show a person)."""
