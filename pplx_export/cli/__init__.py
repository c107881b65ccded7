"""Click front ends. Each command parses flags, builds RunOptions, calls ONE library function."""
