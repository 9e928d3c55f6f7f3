"""Domain packages: tools, path maps, predicates, policies, scenarios."""
