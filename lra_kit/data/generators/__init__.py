"""The ListOps and Pathfinder generators, written from the published generation procedures."""
