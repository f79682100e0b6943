"""Prefect task wrappers of the roles (``evosyn.tasks``): retries, caching, concurrency."""
