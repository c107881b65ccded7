"""Re-render: rebuild every thread's Markdown offline from the stored raw responses."""
