pytest_plugins = ["tests.fixtures.services"]
