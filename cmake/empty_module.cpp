// Stands in for a module directory that has no sources yet.
