"""Numbers and tables in the docs generated from the committed result files: the marker engine
(:mod:`.engine`, whose docstring has the syntax), the docs' tables (:mod:`.tables`) and the pages
they fill (:mod:`.pages`; ``python scripts/gen_docs_numbers.py``)."""
