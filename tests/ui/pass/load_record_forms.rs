//! Every form of `LoadRecord`: a loader closure returning SeaORM models or plain
//! `Serialize` structs (with `template`, `render_with`, `role`), a named async function as
//! the loader, and the declarative table form (`table`, `order_by`, `limit`, `template`).
use protege::{Chain, Context, Role};
use sea_orm::{EntityTrait, QueryOrder};

mod account {
    use sea_orm::entity::prelude::*;

    #[derive(Clone, Debug, PartialEq, Eq, DeriveEntityModel, serde::Serialize)]
    #[sea_orm(table_name = "accounts")]
    pub struct Model {
        #[sea_orm(primary_key)]
        pub id: i64,
        pub name: String,
        pub plan: String,
    }

    #[derive(Copy, Clone, Debug, EnumIter, DeriveRelation)]
    pub enum Relation {}

    impl ActiveModelBehavior for ActiveModel {}
}

#[derive(serde::Serialize)]
struct Order {
    number: String,
    status: String,
}

async fn open_orders(_ctx: Context) -> Result<Vec<Order>, std::io::Error> {
    Ok(vec![Order {
        number: "A-1".into(),
        status: "shipped".into(),
    }])
}

fn main() {
    let chain = protege::resolvers! {
        use LoadRecord(|ctx: Context| async move {
            let Some(db) = ctx.db() else { return Ok(Vec::new()) };
            account::Entity::find().order_by_asc(account::Column::Id).all(db).await
        }, template = "{{ record.name }} ({{ record.plan }})");
        use LoadRecord(|ctx| async move {
            let db = ctx.db().cloned().ok_or("no database")?;
            account::Entity::find().all(&db).await.map_err(|_| "query failed")
        }, render_with = |a: &account::Model| format!("{}: {}", a.id, a.name), role = user);
        use LoadRecord(open_orders);
        use LoadRecord(open_orders, template = "Order {{ record.number }}: {{ record.status }}", role = assistant);
        use LoadRecord(open_orders, render_with = |o: &Order| o.number.clone(), role = Role::Tool,);
        use LoadRecordResolver(|_ctx| async { Ok::<_, String>([1, 2, 3]) });
        use LoadRecord(table = "accounts");
        use LoadRecord(table = "accounts", order_by = "plan", limit = 10);
        use LoadRecord(table = "accounts", order_by = ["plan asc", "id DESC"], limit = None, template = "{{ record.name }}", role = system);
        use LoadRecord(table = String::from("accounts"), limit = Some(3));
    };
    assert_eq!(chain.names(), ["LoadRecord"; 10]);
}
