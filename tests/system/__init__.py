"""Whole processes, not one module: ``yieldmcp serve`` processes killed
(``kill -9``) and restarted, several processes on one store, a real load
balancer in front of them. These test what no single module can promise."""
