"""evolve/scheduling"""
