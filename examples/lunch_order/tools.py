"""Stub food-delivery tools for the lunch-order example: no network, same answers every time.

They stand in for an Uber Eats client: open the app (a session), fill the
cart from an order written in words, book a delivery slot, place the order.
Each tool returns a secret the events must not show (a token, a payment
reference); its ``allowlist`` names the fields that are safe to show.

The ``flowcore`` CLI loads this file with ``--tools examples/lunch_order/tools.py``.
"""

from __future__ import annotations

import itertools

from pydantic import BaseModel, Field

from flowcore.tools import Tool

__all__ = ["MENU", "TOOLS"]

# Prices of the dishes the stub restaurant knows; anything else costs DEFAULT_PRICE.
MENU = {
    "chicken burrito bowl": 11.25,
    "veggie burrito": 9.8,
    "chips and guacamole": 4.1,
    "pad thai": 12.5,
    "green salad": 8.0,
}
DEFAULT_PRICE = 10.0
_ORDER_NUMBERS = itertools.count(1001)


class OpenAppArgs(BaseModel):
    app: str = Field(pattern="^[a-z_]+$")
    user: str = Field(min_length=1)


class Session(BaseModel):
    session_id: str
    app: str
    auth_token: str  # secret: not in the allowlist


async def open_app(args: OpenAppArgs) -> Session:
    return Session(
        session_id=f"{args.app}:{args.user}",
        app=args.app,
        auth_token=f"tok-{args.user}-0f3a9c",
    )


class CartArgs(BaseModel):
    session_id: str
    usual_order: str = Field(min_length=3)


class Cart(BaseModel):
    restaurant: str
    items: list[str]
    cart_total: float


async def add_to_cart(args: CartArgs) -> Cart:
    # "Chicken burrito bowl, chips and guacamole from Chipotle"
    dishes, _, restaurant = args.usual_order.partition(" from ")
    items = [dish.strip() for dish in dishes.split(",") if dish.strip()]
    total = sum(MENU.get(item.lower(), DEFAULT_PRICE) for item in items)
    return Cart(
        restaurant=restaurant.strip() or "the nearest restaurant",
        items=items,
        cart_total=round(total, 2),
    )


class DeliveryArgs(BaseModel):
    session_id: str
    arrive_by: str = Field(pattern=r"^([01][0-9]|2[0-3]):[0-5][0-9]$")


class Delivery(BaseModel):
    delivery_window: str


async def set_delivery_time(args: DeliveryArgs) -> Delivery:
    hours, minutes = (int(part) for part in args.arrive_by.split(":"))
    start = hours * 60 + minutes - 15
    return Delivery(delivery_window=f"{start // 60:02d}:{start % 60:02d}-{args.arrive_by}")


class OrderArgs(BaseModel):
    session_id: str
    cart_total: float = Field(gt=0)


class Placed(BaseModel):
    order_id: str
    status: str
    payment_ref: str  # secret: not in the allowlist


async def place_order(args: OrderArgs) -> Placed:
    number = next(_ORDER_NUMBERS)
    return Placed(order_id=f"UE-{number}", status="placed", payment_ref=f"pay-{number}-visa-4242")


TOOLS = [
    Tool(
        "open_app",
        "Open the food delivery app and sign the user in",
        OpenAppArgs,
        Session,
        open_app,
        allowlist={"session_id", "app"},
    ),
    Tool(
        "add_to_cart",
        "Put the dishes of an order written in words into the cart",
        CartArgs,
        Cart,
        add_to_cart,
        allowlist={"restaurant", "items", "cart_total"},
    ),
    Tool(
        "set_delivery_time",
        "Book the delivery slot that arrives by a given time",
        DeliveryArgs,
        Delivery,
        set_delivery_time,
        allowlist={"delivery_window"},
    ),
    Tool(
        "place_order",
        "Pay for the cart and place the order",
        OrderArgs,
        Placed,
        place_order,
        allowlist={"order_id", "status"},
    ),
]
