"""The benchmark suites behind `autosparse bench SUITE`: autosparse beside its peers on generated and real
data (`data`), one module per suite, each with an argparse `main(argv)`. They import the `bench` extra
(Tensora, pydata sparse), so nothing else in autosparse imports them."""
