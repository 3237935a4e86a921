"""A run's variants (task-neutral): the occlusion ladder and the manifest every step reads."""
