"""Tests of the API's clients, mirroring clients/."""
