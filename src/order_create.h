/*
 * POST /orders: one key, one order, an operation of the engine
 * (engine.h); its steps live in order_create.c.  Its input
 * (engine_request.input) is the parsed body, a struct order_input.
 */
#ifndef IDEMORDERS_ORDER_CREATE_H
#define IDEMORDERS_ORDER_CREATE_H

struct engine_op;

extern const struct engine_op order_create_op;

#endif
