"""LedgerAgent core: ledger, policy gate, agent loop, models, events. Knows no domain and no UI."""
