"""evolve/model"""
