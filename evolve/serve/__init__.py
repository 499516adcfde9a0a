"""``evolve serve RUNS_DIR``: a person's view of a folder of runs, in the browser.

The runs newest first and live, one run's page (the report's drawings, its events as they
happen, what each tool returned), and the inbox of every approval and question the runs wait
for, decided as ``evolve approve`` / ``reject`` / ``answer`` decide. Needs the ``serve`` extra
(Starlette and uvicorn): :mod:`evolve.serve.app` imports them, this package's other modules do not.
"""
