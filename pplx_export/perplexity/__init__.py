"""Site adapter: Perplexity endpoint constants and typed API calls over `net.client`."""
