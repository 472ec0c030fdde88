"""Helpers shared by two or more settings: configuration, validation and seeding."""
