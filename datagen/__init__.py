"""The data engine: crawl pages, mine seeds, compose harder questions; and the `datagen` CLI."""
