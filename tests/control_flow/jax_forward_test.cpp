// Filled in by its owner (issue 14).
