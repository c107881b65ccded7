"""Raw API dicts -> models. Pure: no I/O, no network, no clock."""
