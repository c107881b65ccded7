"""Export and sync: the listing, the plan, the batch that fetches and writes threads, assets,
every account, and the merge with Perplexity's own data export."""
